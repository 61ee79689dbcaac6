// Package leader runs the engine only while its process holds the engine's Lease, with
// client-go's leader election, so that of several replicas exactly one reconciles and a
// standby takes over when the leader goes.
//
// The argument that two leaders never write at once, and its limits:
//   - A leader renews its Lease every RetryPeriod and gives up leading once a round of
//     renewals has failed for RenewDeadline: at most RetryPeriod + RenewDeadline after its
//     last renewal. A standby takes the Lease only once LeaseDuration has passed since the
//     last renewal it saw. New requires RetryPeriod + RenewDeadline < LeaseDuration, which
//     leaves the old leader the difference (3 s by default) to stop before anyone may start.
//   - Giving up leading cancels the engine's context at once: every request a reconcile makes
//     after that moment fails before it is sent, so no reconcile started after it writes; the
//     process then exits (lost is called), as controller-runtime's managers do.
//   - On a graceful stop (ctx ends) the engine stops first, letting in-flight reconciles
//     finish, and only then is the Lease released: a successor starts in seconds, never while
//     the old leader still writes.
//   - Not covered: leader election has no fencing. A request already on the wire when the
//     leader gave up still lands; a process paused longer than the margin (a stopped VM, a
//     SIGSTOP, a clock that jumps) may wake up and send one before it notices. The API
//     server's optimistic concurrency (resourceVersion on updates, server-side apply's field
//     ownership) limits what such a late write can overwrite; it does not prevent it.
package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Config configures an Elector. The timings default to client-go's: LeaseDuration 15 s,
// RenewDeadline 10 s, RetryPeriod 2 s.
type Config struct {
	Client kubernetes.Interface
	// Namespace and Name name the Lease; Identity names this process in it (default: the
	// host name and a random suffix).
	Namespace, Name, Identity                 string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Log                                       *slog.Logger
	// Observe, if set, is told whether this process leads: false when Run starts, then each
	// change as Leading reports it (true when it starts leading, false when it stops). Calls
	// never overlap and come in order; Observe must not block. It is how metrics see the
	// election without this package knowing them.
	Observe func(leading bool)
}

// Elector campaigns for the Lease and runs the engine while it holds it. Its methods are safe
// for concurrent use.
type Elector struct {
	cfg     Config
	le      *leaderelection.LeaderElector
	health  *leaderelection.HealthzAdaptor
	leading atomic.Bool
	// observing serialises changes of leading with their calls of cfg.Observe.
	observing sync.Mutex
}

// ErrLost is returned by Run when the Lease was lost while the engine ran.
var ErrLost = errors.New("lost the leader Lease")

// Timings sets zero timings of a Lease to client-go's defaults (lease 15 s, renew deadline
// 10 s, retry period 2 s) and refuses timings that leave no margin: a holder gives up at most
// a retry period and its renew deadline after its last renewal, and others wait for the
// lease duration, so the first two together must be shorter than the third.
func Timings(lease, renew, retry *time.Duration) error {
	if *lease == 0 {
		*lease = 15 * time.Second
	}
	if *renew == 0 {
		*renew = 10 * time.Second
	}
	if *retry == 0 {
		*retry = 2 * time.Second
	}
	if *retry >= *renew || *retry+*renew >= *lease {
		return fmt.Errorf("Lease timings: want retry period %v < renew deadline %v, and both together < lease duration %v, so that a holder stops before another may start",
			*retry, *renew, *lease)
	}
	return nil
}

// New returns an Elector; it campaigns once Run is called.
func New(cfg Config) (*Elector, error) {
	if err := Timings(&cfg.LeaseDuration, &cfg.RenewDeadline, &cfg.RetryPeriod); err != nil {
		return nil, err
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = host + "_" + rand.String(8)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Observe == nil {
		cfg.Observe = func(bool) {}
	}
	// Liveness fails once a leader has not renewed for its renew deadline and as long again.
	return &Elector{cfg: cfg, health: leaderelection.NewLeaderHealthzAdaptor(cfg.RenewDeadline)}, nil
}

// Identity is this process's name in the Lease.
func (e *Elector) Identity() string { return e.cfg.Identity }

// Leading reports whether the engine runs: this process holds the Lease.
func (e *Elector) Leading() bool { return e.leading.Load() }

// setLeading records whether the engine runs, tells Observe if that changed, and returns
// what it was.
func (e *Elector) setLeading(leading bool) bool {
	e.observing.Lock()
	defer e.observing.Unlock()
	was := e.leading.Swap(leading)
	if was != leading {
		e.cfg.Observe(leading)
	}
	return was
}

// Healthy returns an error when this process leads but has not renewed its Lease for too long
// (a liveness check: renewals stopped); nil otherwise, standbys included.
func (e *Elector) Healthy(r *http.Request) error { return e.health.Check(r) }

// Run campaigns until ctx ends. Once this process holds the Lease it calls lead with a
// context that ends when ctx ends or the Lease is lost, and returns what lead returns. When
// ctx ends it waits for lead to return before releasing the Lease. When the Lease is lost
// while ctx has not ended, lost is called at once (it should end the process) and Run returns
// ErrLost. Run is called once.
func (e *Elector) Run(ctx context.Context, lead func(context.Context) error, lost func()) error {
	e.observing.Lock()
	e.cfg.Observe(false)
	e.observing.Unlock()
	electing, stopElecting := context.WithCancel(context.Background())
	defer stopElecting()
	var (
		mu       sync.Mutex
		stopping bool
		running  bool
	)
	result := make(chan error, 1)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
		Client:     e.cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.cfg.Identity},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: e.cfg.Name, ReleaseOnCancel: true, WatchDog: e.health,
		LeaseDuration: e.cfg.LeaseDuration, RenewDeadline: e.cfg.RenewDeadline, RetryPeriod: e.cfg.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(held context.Context) {
				mu.Lock()
				if stopping {
					mu.Unlock()
					return
				}
				running = true
				mu.Unlock()
				e.setLeading(true)
				e.cfg.Log.Info("leading: this engine holds the Lease and reconciles", "lease", e.lease(), "identity", e.cfg.Identity)
				run, cancel := context.WithCancel(held)
				stop := context.AfterFunc(ctx, cancel)
				err := lead(run)
				stop()
				cancel()
				if err == nil && held.Err() != nil && ctx.Err() == nil {
					err = ErrLost
				}
				result <- err
			},
			OnStoppedLeading: func() {
				wasLeading := e.setLeading(false)
				if wasLeading && ctx.Err() == nil {
					e.cfg.Log.Error("lost the Lease: stopping at once", "lease", e.lease(), "identity", e.cfg.Identity)
					lost()
				}
			},
			OnNewLeader: func(identity string) {
				if identity != e.cfg.Identity {
					e.cfg.Log.Info("standing by: another engine leads", "lease", e.lease(), "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	e.health.SetLeaderElection(le)
	e.le = le
	elected := make(chan struct{})
	go func() {
		defer close(elected)
		le.Run(electing)
	}()
	select {
	case err = <-result:
	case <-ctx.Done():
		mu.Lock()
		stopping = true
		wait := running
		mu.Unlock()
		if wait {
			err = <-result
		}
	}
	stopElecting() // releases the Lease: lead has returned
	<-elected
	return err
}

func (e *Elector) lease() string { return e.cfg.Namespace + "/" + e.cfg.Name }

// InClusterNamespace is the namespace of the ServiceAccount the process runs as, or "" outside
// a cluster.
func InClusterNamespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
