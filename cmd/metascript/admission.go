package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"metascript.dev/metascript/engine"
	"metascript.dev/metascript/engine/admission"
	"metascript.dev/metascript/engine/resources"
	"metascript.dev/metascript/scripting"
)

var admissionUsage = `Usage: metascript admission --tls-cert-file FILE --tls-private-key-file FILE [flags]

Serves a validating admission webhook (admission.k8s.io/v1 AdmissionReview) on HTTPS at
/validate, and /healthz. It denies the CREATE or UPDATE of a controller resource the engine
would refuse to run, with every problem located by its field path and, for compile errors,
LINE:COL in the hook's source:
  - hooks that do not compile, required hooks that are missing, unusable webhook settings;
  - budgets over the engine's ceilings (--ceiling-hook-*: give it the engine's values; the
    engine would run such a hook capped, the webhook refuses it);
  - a spec.serviceAccount the engine would refuse, and, for a namespaced kind, ConfigMap or
    Secret references (hook sources, webhook CA bundles, credentials, endpointConfigs)
    naming another namespace;
  - with a cluster connection (--kubeconfig, or the in-cluster config; --discovery=false
    for none): a cluster-scoped parent, child or input resource on a namespaced kind, and
    the kind's own spec rules (selectors, update strategies);
  - with a cluster connection (--check-service-accounts=false for none): that the user who
    creates a controller, or changes the ServiceAccount it acts as, may act as that account:
    "use" on serviceaccounts.metascript.dev, or "impersonate" on serviceaccounts, named the
    account in its namespace (a namespaced controller's default is its namespace's
    "default"), asked by SubjectAccessReview (create on subjectaccessreviews).
Sources and credentials kept in ConfigMaps and Secrets are not read: the engine reports
those when it builds the controller.

Controller kinds and their hooks (* required):
` + kindHooks(required) + `
The certificate files are read again when they change (cert-manager renews them in place).

Flags:
`

// admissionFlags are the flags of `metascript admission`.
type admissionFlags struct {
	listen, certFile, keyFile string
	kubeconfig                string
	discovery                 bool
	checkAccounts             bool
	logLevel                  string
	ceilings                  budgetFlags
}

// admissionCommand is `metascript admission`: it serves until SIGINT or SIGTERM.
func admissionCommand(args []string, stderr io.Writer) int {
	f := &admissionFlags{}
	fs := newFlagSet("admission", admissionUsage, stderr)
	fs.StringVar(&f.listen, "listen", ":8443", "address of the HTTPS server")
	fs.StringVar(&f.certFile, "tls-cert-file", "", "PEM certificate (chain) the server presents; required")
	fs.StringVar(&f.keyFile, "tls-private-key-file", "", "PEM private key of --tls-cert-file; required")
	fs.StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file for discovery; in-cluster config when empty")
	fs.BoolVar(&f.discovery, "discovery", true, "resolve the controllers' resources through discovery; false checks only what needs no cluster")
	fs.BoolVar(&f.checkAccounts, "check-service-accounts", true,
		"refuse a controller whose writer may not act as the ServiceAccount it names (SubjectAccessReviews; needs a cluster connection)")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	f.ceilings.registerCeilings(fs)
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected arguments %q", fs.Args())
	}
	if f.certFile == "" || f.keyFile == "" {
		return usageError(fs, "--tls-cert-file and --tls-private-key-file are required")
	}
	log, err := newLogger(f.logLevel)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	handler, err := admissionHandler(f, log)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	certs, err := newCertificateFiles(f.certFile, f.keyFile)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return usageError(fs, "--listen: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log.Info("admission webhook serving", "addr", ln.Addr().String(), "discovery", handler.Options.Resolver != nil,
		"checkServiceAccounts", handler.Accounts != nil)
	if err := serveAdmission(ctx, ln, certs.get, handler); err != nil {
		log.Error("admission webhook stopped", "error", err.Error())
		return 1
	}
	return 0
}

// admissionHandler is the webhook's handler: the engine's compiler, the ceilings of the
// flags and, unless told otherwise, discovery and account checks through the cluster
// connection.
func admissionHandler(f *admissionFlags, log *slog.Logger) (*admission.Handler, error) {
	ceilings, err := f.ceilings.budget()
	if err != nil {
		return nil, fmt.Errorf("--ceiling-hook-max-memory: %w", err)
	}
	// Compile only: defaults do not matter, and the ceilings are checked, not applied.
	h := &admission.Handler{Options: admission.Options{Compiler: engine.NewRuntime(scripting.Options{}), Ceilings: &ceilings,
		WebhookCeiling: f.ceilings.webhookTimeout}, Log: log}
	if !f.discovery && !f.checkAccounts {
		return h, nil
	}
	cfg, err := clusterConfig(f.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("cluster config (--discovery=false --check-service-accounts=false check without one): %w", err)
	}
	cfg.UserAgent = "metascript-admission"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if f.discovery {
		h.Options.Resolver = resources.NewResolver(kube.Discovery())
	}
	if f.checkAccounts {
		h.Accounts = kube.AuthorizationV1().SubjectAccessReviews()
	}
	return h, nil
}

func clusterConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

// serveAdmission serves handler at /validate and /healthz over TLS on ln until ctx ends,
// then lets reviews in flight finish (they take milliseconds).
func serveAdmission(ctx context.Context, ln net.Listener, cert func(*tls.ClientHelloInfo) (*tls.Certificate, error), handler http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle("/validate", handler)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cert}}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// certificateFiles serves a key pair from files, read again when either file's modification
// time changes, so that a renewed certificate is served without a restart. A renewal that
// cannot be loaded (files half written) keeps the previous pair. Safe for concurrent use.
type certificateFiles struct {
	certFile, keyFile string
	mu                sync.Mutex
	stamp             [2]time.Time
	pair              *tls.Certificate
}

func newCertificateFiles(certFile, keyFile string) (*certificateFiles, error) {
	c := &certificateFiles{certFile: certFile, keyFile: keyFile}
	if _, err := c.get(nil); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certificateFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	var stamp [2]time.Time
	for i, p := range []string{c.certFile, c.keyFile} {
		if st, err := os.Stat(p); err == nil {
			stamp[i] = st.ModTime()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pair != nil && stamp == c.stamp {
		return c.pair, nil
	}
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		if c.pair != nil {
			return c.pair, nil
		}
		return nil, fmt.Errorf("TLS key pair: %w", err)
	}
	c.pair, c.stamp = &pair, stamp
	return c.pair, nil
}
