// protogo: protobuf-go as an oracle for appwatch's Spec decoder (src/flyte/proto/json-decoder.ts).
//
// It loads a FileDescriptorSet that appwatch's own declarations produce (no Flyte files), then for
// each stdin line (base64 of a binary message) prints what Flyte's Go code does with those bytes:
// proto.Unmarshal into the message, then protojson.Marshal (connect-go's JSON codec):
//
//	{"ok":true,"json":"…"} or {"ok":false,"stage":"unmarshal"|"marshal","error":"…"}
//
// Usage: go run . <descriptor-set.binpb> <message full name> < inputs > answers
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

type answer struct {
	OK    bool   `json:"ok"`
	JSON  string `json:"json,omitempty"`
	Stage string `json:"stage,omitempty"`
	Error string `json:"error,omitempty"`
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: protogo <descriptor-set.binpb> <message full name>")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	check(err)
	var set descriptorpb.FileDescriptorSet
	check(proto.Unmarshal(raw, &set))
	files, err := protodesc.NewFiles(&set)
	check(err)
	desc, err := files.FindDescriptorByName(protoreflect.FullName(os.Args[2]))
	check(err)
	md, ok := desc.(protoreflect.MessageDescriptor)
	if !ok {
		check(fmt.Errorf("%s is not a message", os.Args[2]))
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		data, err := base64.StdEncoding.DecodeString(in.Text())
		check(err)
		msg := dynamicpb.NewMessage(md)
		var a answer
		if err := proto.Unmarshal(data, msg); err != nil {
			a = answer{Stage: "unmarshal", Error: err.Error()}
		} else if text, err := (protojson.MarshalOptions{}).Marshal(msg); err != nil {
			a = answer{Stage: "marshal", Error: err.Error()}
		} else {
			a = answer{OK: true, JSON: string(text)}
		}
		check(enc.Encode(a))
	}
	check(in.Err())
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "protogo:", err)
		os.Exit(1)
	}
}
