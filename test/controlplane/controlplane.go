// Package controlplane starts a real etcd and kube-apiserver on loopback for tests, the demo
// and `make cluster-up`. The binaries are built from source by build.sh beside this file and
// cached under .cache/controlplane/ by version; the first build takes minutes, later starts
// take seconds.
package controlplane

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControlPlane is a running etcd and kube-apiserver.
type ControlPlane struct {
	// Config reaches the API server as a member of system:masters.
	Config *rest.Config
	env    *envtest.Environment
	tmp    string // files Start wrote for the API server, removed by Stop
}

// Options tune Start.
type Options struct {
	// CRDDirs are installed before Start returns. Defaults to the repository's manifests/crds.
	CRDDirs []string
	// AuditLog, when set, is the file the API server appends its audit log to: one JSON
	// event per line for every request, at level Metadata, stages ResponseStarted (long-running
	// requests such as watches) and ResponseComplete. The log backend runs in blocking mode:
	// each event is written before its request returns, so none is dropped under load, as
	// batch mode would when its buffer fills.
	AuditLog string
	// FeatureGates, when set, is the API server's --feature-gates, e.g.
	// "CBORServingAndStorage=true".
	FeatureGates string
}

// auditPolicy records every request's metadata, once it has a response.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
`

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
	if opts.FeatureGates != "" {
		env.ControlPlane.GetAPIServer().Configure().Set("feature-gates", opts.FeatureGates)
	}
	var tmp string
	if opts.AuditLog != "" {
		if tmp, err = os.MkdirTemp("", "controlplane-"); err != nil {
			return nil, err
		}
		policy := filepath.Join(tmp, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
		env.ControlPlane.GetAPIServer().Configure().
			Set("audit-policy-file", policy).
			Set("audit-log-path", opts.AuditLog).
			Set("audit-log-format", "json").
			Set("audit-log-mode", "blocking").
			Set("audit-log-maxsize", "0") // never rotate: readers follow one file
	}
	env.ControlPlane.Etcd = &envtest.Etcd{}
	env.ControlPlane.Etcd.Configure().Set("unsafe-no-fsync", "true")
	cfg, err := env.Start()
	if err != nil {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return nil, fmt.Errorf("controlplane: start: %w", err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	return &ControlPlane{Config: cfg, env: env, tmp: tmp}, nil
}

// KubeConfig returns a kubeconfig for a system:masters user.
func (c *ControlPlane) KubeConfig() ([]byte, error) {
	user, err := c.env.AddUser(envtest.User{Name: "metascript-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}
	return user.KubeConfig()
}

// User adds a user of the given name in the group system:masters and returns its config and
// a kubeconfig for it. The API server knows requests of each user apart, as in its audit log;
// the config has client-go's default QPS and Burst.
func (c *ControlPlane) User(name string) (*rest.Config, []byte, error) {
	user, err := c.env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, nil, err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, nil, err
	}
	return rest.CopyConfig(user.Config()), kubeconfig, nil
}

// APIServerPID is the process ID of this control plane's kube-apiserver, found in /proc by
// its secure port (Linux only): envtest does not expose it.
func (c *ControlPlane) APIServerPID() (int, error) {
	port := c.env.ControlPlane.APIServer.SecureServing.Port
	return findProcess("kube-apiserver", "--secure-port="+port)
}

// EtcdPID is the process ID of this control plane's etcd, found in /proc by its client URL
// (Linux only).
func (c *ControlPlane) EtcdPID() (int, error) {
	return findProcess("etcd", "--listen-client-urls="+c.env.ControlPlane.Etcd.URL.String())
}

// findProcess returns the process whose program is named name and one of whose arguments is
// arg.
func findProcess(name, arg string) (int, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("controlplane: finding %s: %w", name, err)
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if filepath.Base(args[0]) != name {
			continue
		}
		for _, a := range args[1:] {
			if a == arg {
				return pid, nil
			}
		}
	}
	return 0, fmt.Errorf("controlplane: no %s process with %s", name, arg)
}

// Stop stops both processes and removes their data.
func (c *ControlPlane) Stop() error {
	err := c.env.Stop()
	if c.tmp != "" {
		os.RemoveAll(c.tmp)
	}
	return err
}

// AuditEvent is what tests read of one request in the audit log (Options.AuditLog).
type AuditEvent struct {
	Stage    string    `json:"stage"`
	Verb     string    `json:"verb"`
	Received time.Time `json:"requestReceivedTimestamp"`
	User     struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
}

// IsWrite reports whether the request changed something: create, update, patch or delete.
func (e *AuditEvent) IsWrite() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// ReadAudit calls each for every completed request (stage ResponseComplete) in the audit
// log at path, in the order of the file.
func ReadAudit(path string, each func(*AuditEvent)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var ev AuditEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Stage != "ResponseComplete" {
			continue
		}
		each(&ev)
	}
	return sc.Err()
}

// RunTests is a package's TestMain for tests against one control plane: it starts one
// (unless -short, when the tests that need it skip themselves and cp stays nil), runs the
// tests, stops it and exits with the tests' code. cp receives the control plane.
func RunTests(m interface{ Run() int }, cp **ControlPlane) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	started, err := Start(Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*cp = started
	code := m.Run()
	if err := started.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}
