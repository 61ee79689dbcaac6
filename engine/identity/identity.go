// Package identity gives a controller that names a ServiceAccount the clients its writes go
// through: clients that impersonate the account, so that the API server's RBAC, not the
// engine's own rights, decides what the controller may write. The engine's account needs
// the impersonate verb on the ServiceAccounts it serves, and nothing more for them.
package identity

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"metascript.dev/metascript/engine/wire"
)

// Source makes impersonating clients from the engine's own configuration. It is safe for
// concurrent use.
type Source struct {
	// Config is the engine's; it is copied, never modified.
	Config *rest.Config
	// Reviewer answers what the accounts may read.
	Reviewer *Reviewer
}

// Account is one ServiceAccount's clients. Close must be called once it is no longer used.
type Account struct {
	// User is the account's user name, system:serviceaccount:NAMESPACE:NAME.
	User string
	// Dynamic writes as the account.
	Dynamic dynamic.Interface
	// Recorder records Events as the account. Its broadcaster, a goroutine and a queue, is
	// made when the first Event is recorded: most controllers' hooks ask for none, and a
	// thousand tenants' idle broadcasters cost tens of MiB.
	Recorder record.EventRecorder

	recorder *lazyRecorder
	reviewer *Reviewer
}

// MayRead returns a *ReadRefusedError unless the account may make the read: verb on
// resource in namespace, or across the cluster when namespace is empty. Safe for concurrent
// use.
func (a *Account) MayRead(ctx context.Context, verb string, resource schema.GroupVersionResource, namespace string) error {
	return a.reviewer.Check(ctx, Access{User: a.User, Verb: verb, Resource: resource, Namespace: namespace})
}

// Close stops the account's Event recorder, after the Events recorded so far are sent.
func (a *Account) Close() { a.recorder.close() }

// User is the user name of the ServiceAccount namespace/name.
func User(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// groupsOf are the groups the API server gives a ServiceAccount's user.
func groupsOf(user string) []string {
	parts := strings.Split(user, ":")
	if len(parts) != 4 || parts[0] != "system" || parts[1] != "serviceaccount" {
		return []string{"system:authenticated"}
	}
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + parts[2], "system:authenticated"}
}

// For returns clients that impersonate the ServiceAccount namespace/name. The API server
// adds the account's groups (system:serviceaccounts and system:serviceaccounts:NAMESPACE)
// itself when no groups are given.
func (s *Source) For(namespace, name string) (*Account, error) {
	cfg := rest.CopyConfig(s.Config)
	user := User(namespace, name)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	dyn, err := wire.NewDynamic(cfg)
	if err != nil {
		return nil, fmt.Errorf("client impersonating %s: %w", user, err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client impersonating %s: %w", user, err)
	}
	rec := &lazyRecorder{events: kube.CoreV1()}
	return &Account{User: user, Dynamic: dyn, Recorder: rec, recorder: rec, reviewer: s.Reviewer}, nil
}

// lazyRecorder is an EventRecorder whose broadcaster starts with its first Event.
type lazyRecorder struct {
	events typedcorev1.EventsGetter

	mu          sync.Mutex
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	closed      bool
}

var _ record.EventRecorder = (*lazyRecorder)(nil)

// get is the recorder, started on first use; nil once closed.
func (l *lazyRecorder) get() record.EventRecorder {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if l.recorder == nil {
		l.broadcaster = record.NewBroadcaster()
		l.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: l.events.Events("")})
		l.recorder = l.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "metascript"})
	}
	return l.recorder
}

func (l *lazyRecorder) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.broadcaster != nil {
		l.broadcaster.Shutdown()
	}
}

func (l *lazyRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	if r := l.get(); r != nil {
		r.Event(object, eventtype, reason, message)
	}
}

func (l *lazyRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if r := l.get(); r != nil {
		r.Eventf(object, eventtype, reason, messageFmt, args...)
	}
}

func (l *lazyRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if r := l.get(); r != nil {
		r.AnnotatedEventf(object, annotations, eventtype, reason, messageFmt, args...)
	}
}
