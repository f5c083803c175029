// Command etcd is etcd's own server entry point, built from go.etcd.io/etcd/server/v3 at the version
// go.mod pins (Debian 12's etcd 3.4.23 is older than Kubernetes 1.37 supports).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
