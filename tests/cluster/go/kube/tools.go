//go:build tools

// Package tools pins the commands built by scripts/build-kube.sh; it is never compiled.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
