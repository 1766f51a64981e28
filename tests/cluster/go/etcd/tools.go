//go:build tools

// Package tools pins the commands built by scripts/build-kube.sh; it is never compiled.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
