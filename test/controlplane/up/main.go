// Command up runs a local control plane until it is sent SIGTERM or SIGINT: it writes
// <dir>/kubeconfig once the API server is ready, and removes its data when stopped.
// `make cluster-up` runs it in the background; `make cluster-down` stops it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"metascript.dev/metascript/test/controlplane"
)

func main() {
	dir := flag.String("dir", ".cluster", "folder for kubeconfig and pid")
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	fmt.Fprintln(os.Stderr, "[controlplane] starting etcd and kube-apiserver")
	cp, err := controlplane.Start(controlplane.Options{})
	if err != nil {
		return err
	}
	defer cp.Stop()
	kubeconfig, err := cp.KubeConfig()
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path+".tmp", kubeconfig, 0o600); err != nil {
		return err
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "[controlplane] ready at %s; kubeconfig in %s\n", cp.Config.Host, path)
	<-stop
	fmt.Fprintln(os.Stderr, "[controlplane] stopping")
	os.Remove(path)
	return nil
}
