// Package controlplane starts a real etcd and kube-apiserver on loopback for tests, the demo
// and `make cluster-up`. The binaries are built from source by build.sh beside this file and
// cached under .cache/controlplane/ by version; the first build takes minutes, later starts
// take seconds.
package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	// Config reaches the API server as a member of system:masters.
	Config *rest.Config
	env    *envtest.Environment
}

// Options tune Start.
type Options struct {
	// CRDDirs are installed before Start returns. Defaults to the repository's manifests/crds.
	CRDDirs []string
}

// RepoRoot is the folder holding the module's go.mod.
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if ok {
		// file is <root>/test/controlplane/controlplane.go when built from the module.
		root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			return root, nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("controlplane: no go.mod above the working directory")
		}
		dir = parent
	}
}

// BinaryDir returns the folder holding etcd and kube-apiserver, building them first when the
// cache lacks them. Progress goes to stderr.
func BinaryDir() (string, error) {
	if dir := os.Getenv("METASCRIPT_CONTROLPLANE_BIN"); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, "test", "controlplane", "build.sh"))
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("controlplane: building etcd and kube-apiserver: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[len(lines)-1], nil
}

// Start starts etcd and kube-apiserver and installs the CRDs. Stop must be called.
func Start(opts Options) (*ControlPlane, error) {
	bin, err := BinaryDir()
	if err != nil {
		return nil, err
	}
	if opts.CRDDirs == nil {
		root, err := RepoRoot()
		if err != nil {
			return nil, err
		}
		opts.CRDDirs = []string{filepath.Join(root, "manifests", "crds")}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: bin,
		CRDDirectoryPaths:     opts.CRDDirs,
		ErrorIfCRDPathMissing: true,
	}
	env.ControlPlane.GetAPIServer().Configure().
		// No controller-manager runs, so there is no ServiceAccount controller.
		Append("disable-admission-plugins", "ServiceAccount")
	env.ControlPlane.Etcd = &envtest.Etcd{}
	env.ControlPlane.Etcd.Configure().Set("unsafe-no-fsync", "true")
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("controlplane: start: %w", err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	return &ControlPlane{Config: cfg, env: env}, nil
}

// KubeConfig returns a kubeconfig for a system:masters user.
func (c *ControlPlane) KubeConfig() ([]byte, error) {
	user, err := c.env.AddUser(envtest.User{Name: "metascript-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	return user.KubeConfig()
}

// Stop stops both processes and removes their data.
func (c *ControlPlane) Stop() error { return c.env.Stop() }
