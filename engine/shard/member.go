// Package shard shares the parents of every controller among the engine's replicas
// (`metascript run --sharding`). Every replica is a member of a ring: it holds a Lease of its
// own, labelled with the ring's name, and watches the others'. The live members make a view;
// a consistent hash (Ring) of the view assigns each parent, by its kind and key, to one
// member, and a parent's children, attachments and outputs follow it, since their events
// reach the engine as requests for the parent.
//
// The argument that no parent is reconciled by two members at once:
//   - A member reconciles a parent only while it is authorized under its current view V: it
//     owns the parent on V's ring, it has published V in its Lease (the view annotation), and
//     every other member of V has published V too. Begin checks this and counts the reconcile
//     in flight; Owns checks it for events.
//   - A member publishes V only after it has adopted V and drained: on a view change it stops
//     authorizing anything, waits for every reconcile in flight to finish (at most
//     DrainTimeout, else it gives up like a member that lost its Lease), and only then writes
//     V. So when member B sees every member's Lease say V, each of them has stopped working on
//     what V does not give it: a parent moves only after its old member acknowledged, through
//     the cluster, that it stopped.
//   - A member that stops renewing (crashed, partitioned) holds up nobody for longer than the
//     lease duration: the others drop it from their view once its Lease has not been renewed
//     for that long (by their own clocks, from when they saw the renewal, as client-go's
//     leader election does), and never admit that Lease again. The member itself gives up
//     after RenewDeadline without a renewal (RetryPeriod + RenewDeadline < LeaseDuration, as
//     for leader election), cancelling every reconcile, and exits; so it has stopped before
//     the others drop it. A member whose Lease another deleted gives up at its next renewal.
//   - Two members' views may differ for a moment, but a parent moves between two members only
//     when one of them joins or leaves the ring (consistent hashing), and then whoever gains
//     it waits for the acknowledgement of the other, which its view contains.
//   - Limits, as for leader election: there is no fencing. A request on the wire when a member
//     gave up still lands, and a process paused for longer than the margin may send one more.
//
// Each member caches only what its parents need (engine/informers' Factory.ShareBy with
// Leads). After it acknowledges a view, a member has its caches catch up with what the view
// gives it (Caches) before it reconciles under that view, so that a parent it gains is never
// reconciled without its children in the cache.
//
// A view change pauses every member until all have acknowledged it (a few API round trips and
// the longest reconcile in flight); then each enqueues its parents again, reading state from
// the cluster: nothing but the Leases carries the hand-over.
package shard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/leader"
)

// Label and annotation of member Leases.
const (
	// RingLabel names the ring a member Lease belongs to.
	RingLabel = "metascript.dev/ring"
	// ViewAnnotation is the view the member has adopted and drained for.
	ViewAnnotation = "metascript.dev/view"
	// CountsAnnotation is how many parents of each controller the member owns and how many
	// children those have, as JSON {"controller": [parents, children]}: one member writes
	// each controller's status, from every member's counts (its caches hold its share alone).
	CountsAnnotation = "metascript.dev/counts"
)

// Caches are the engine's informers when they cache only the member's share
// (engine/informers' Factory.ShareBy with the member's Leads). On a view change the member
// has them catch up (Reshard) and reconciles under the new view only once settled reports
// that they have.
type Caches interface {
	Reshard() (settled func() bool)
}

// Config configures a Member. The timings default to leader election's: LeaseDuration 15 s,
// RenewDeadline 10 s, RetryPeriod 2 s.
type Config struct {
	Client kubernetes.Interface
	// Namespace holds the member Leases; Ring names the ring (its Leases are
	// <Ring>-<Identity>, labelled RingLabel=<Ring>).
	Namespace, Ring string
	// Identity names this member (default: the host name and a random suffix, so that a
	// restarted process is a new member).
	Identity                                  string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// DrainTimeout bounds how long reconciles in flight may take to finish on a view change;
	// a member that cannot drain in time gives up as if it lost its Lease. Default:
	// RenewDeadline.
	DrainTimeout time.Duration
	// CacheTimeout bounds how long the caches (ShareCaches) may take to catch up with a new
	// view; a member whose caches do not, gives up. Default: one minute.
	CacheTimeout time.Duration
	Log          *slog.Logger
	Metrics      *Metrics // optional
}

// Member is one replica's place in the ring. Owns and Begin are the gate the engine's
// reconciles pass; Run holds the Lease and runs the engine. Its methods are safe for
// concurrent use.
type Member struct {
	cfg  Config
	name string // of the own Lease, and the member's name on the ring

	// cur is what the gate reads on every event and reconcile, without a lock: replaced
	// whole, under mu, never modified. inflight counts the reconciles Begin let start.
	cur      atomic.Pointer[state]
	inflight atomic.Int64

	mu     sync.Mutex
	peers  map[string]*peer
	gone   map[string]bool // Leases seen expire or deleted: never members again
	acked  string          // the view published in the own Lease
	gained []func()
	viewed chan struct{} // a view change for the drainer, buffered 1
	// caches, when set, catch up with each view: settle reports whether they did for
	// settleView; cachedView is the last view they caught up with.
	caches                 Caches
	settle                 func() bool
	settleView, cachedView string
	settleGen              uint64 // counts settle's replacements
	// counts is what the member publishes in CountsAnnotation.
	counts map[string][2]int

	writeMu   sync.Mutex // one write of the own Lease at a time
	lease     *coordinationv1.Lease
	renewed   atomic.Int64 // unix nanos of the last successful write of the own Lease
	joined    atomic.Bool
	lostOnce  sync.Once
	lostCh    chan struct{}
	lostCause atomic.Value // error
}

// state is a view and whether the member is authorized under it.
type state struct {
	view       string // ID of the view
	ring       *Ring
	authorized bool
}

type peer struct {
	ack        string
	renew      string // spec.renewTime as written, to notice renewals
	duration   time.Duration
	observedAt time.Time // local time the renewal was seen
	uid        string
	counts     map[string][2]int // its CountsAnnotation
}

// ErrLost is returned by Run when the member gave up its place: it could not renew its
// Lease, another deleted it, or it could not drain in time.
var ErrLost = errors.New("lost the member Lease")

// New returns a Member; it joins the ring once Run is called.
func New(cfg Config) (*Member, error) {
	if err := leader.Timings(&cfg.LeaseDuration, &cfg.RenewDeadline, &cfg.RetryPeriod); err != nil {
		return nil, fmt.Errorf("sharding: %w", err)
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = cfg.RenewDeadline
	}
	if cfg.CacheTimeout == 0 {
		cfg.CacheTimeout = time.Minute
	}
	if cfg.Client == nil || cfg.Namespace == "" || cfg.Ring == "" {
		return nil, errors.New("sharding: a client, a namespace and a ring name are required")
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = host + "-" + rand.String(5)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	name := leaseName(cfg.Ring, cfg.Identity)
	cfg.Log = cfg.Log.With("member", name)
	m := &Member{cfg: cfg, name: name, peers: map[string]*peer{}, gone: map[string]bool{},
		viewed: make(chan struct{}, 1), lostCh: make(chan struct{}), counts: map[string][2]int{}}
	m.cur.Store(&state{ring: NewRing(nil)})
	return m, nil
}

// leaseName is a valid object name made of the ring's and the identity's: lower case, any
// other character than letters, digits, '-' and '.' replaced by '-'.
func leaseName(ring, identity string) string {
	n := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, ring+"-"+identity)
	if len(n) > 253 {
		n = n[:253]
	}
	return strings.Trim(n, "-.")
}

// Name returns the member's name on the ring (its Lease's).
func (m *Member) Name() string { return m.name }

// OnGain registers f, called (on a goroutine of its own) each time the member becomes
// authorized under a new view: the engine enqueues its parents again, since events that
// arrived while it was paused were dropped.
func (m *Member) OnGain(f func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gained = append(m.gained, f)
}

// Owns reports whether the member may reconcile the parent named key now.
func (m *Member) Owns(key string) bool {
	s := m.cur.Load()
	return s.authorized && s.ring.Owner(key) == m.name
}

// Leads reports whether key belongs to the member on its current view's ring, whether or
// not that view is acknowledged yet: for writes whose repetition does no harm, such as a
// controller's status, which one member writes while views agree (two, for a moment, while
// they change).
func (m *Member) Leads(key string) bool { return m.cur.Load().ring.Owner(key) == m.name }

// ShareCaches makes the member have caches catch up with every view before it reconciles
// under it. It must be called before Run.
func (m *Member) ShareCaches(c Caches) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.caches = c
}

// RecordCounts publishes how many of a controller's parents the member owns and how many
// children those have, in its Lease at the next renewal and in metrics; negative parents
// removes the controller.
func (m *Member) RecordCounts(controller string, parents, children int) {
	m.cfg.Metrics.SetParents(controller, parents)
	m.mu.Lock()
	defer m.mu.Unlock()
	if parents < 0 {
		delete(m.counts, controller)
		return
	}
	m.counts[controller] = [2]int{parents, children}
}

// Totals sums what the members of the current view published for controller, the member's
// own counts as recorded last. Counts of others are as old as their last renewal.
func (m *Member) Totals(controller string) (parents, children int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	own := m.counts[controller]
	parents, children = own[0], own[1]
	for _, name := range m.cur.Load().ring.Members() {
		if p := m.peers[name]; p != nil && name != m.name {
			c := p.counts[controller]
			parents, children = parents+c[0], children+c[1]
		}
	}
	return parents, children
}

// Begin starts a reconcile of the parent named key, if the member may reconcile it now;
// end must then be called once the reconcile has returned. A view change waits for every
// reconcile begun before it: Begin counts the reconcile before it reads the state, and a
// view change replaces the state before the drain reads the count, so either the drain
// sees the reconcile or the reconcile sees the new state.
func (m *Member) Begin(key string) (end func(), ok bool) {
	m.inflight.Add(1)
	if s := m.cur.Load(); !s.authorized || s.ring.Owner(key) != m.name {
		m.inflight.Add(-1)
		return nil, false
	}
	return m.end, true
}

func (m *Member) end() { m.inflight.Add(-1) }

// Members returns how many members the current view has (this one included, once joined).
func (m *Member) Members() int { return len(m.cur.Load().ring.Members()) }

// Joined reports whether the member holds its Lease and is authorized under its view: it is
// reconciling its share.
func (m *Member) Joined() bool { return m.joined.Load() && m.cur.Load().authorized }

// Healthy is a liveness check: it fails once the own Lease has not been renewed for longer
// than the renew deadline and a retry period, when the member should have given up.
func (m *Member) Healthy(*http.Request) error {
	last := m.renewed.Load()
	if last == 0 {
		return nil // not joined yet
	}
	if since := time.Since(time.Unix(0, last)); since > m.cfg.RenewDeadline+m.cfg.RetryPeriod {
		return fmt.Errorf("member Lease %s not renewed for %s", m.name, since.Round(time.Second))
	}
	return nil
}

// lose gives the member's place up, once: Run cancels the engine and returns ErrLost.
func (m *Member) lose(cause error) {
	m.lostOnce.Do(func() {
		m.lostCause.Store(cause)
		m.mu.Lock()
		s := *m.cur.Load()
		s.authorized = false
		m.cur.Store(&s)
		m.mu.Unlock()
		m.cfg.Log.Error("giving up the member Lease; stopping every reconcile", "error", cause.Error())
		close(m.lostCh)
	})
}

func (m *Member) isLost() bool {
	select {
	case <-m.lostCh:
		return true
	default:
		return false
	}
}

// Run joins the ring and runs run with a context that ends when ctx ends or the member gives
// up its place. On a graceful stop (ctx ends) it waits for run to return and then deletes its
// Lease, so that the others take its share over at once. If the member gave up its place,
// run's context is cancelled at that moment, lost is called, and Run returns ErrLost.
func (m *Member) Run(ctx context.Context, run func(context.Context) error, lost func()) error {
	if err := m.join(ctx); err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(m.cfg.Client, 0, informers.WithNamespace(m.cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = RingLabel + "=" + m.cfg.Ring }))
	inf := factory.Coordination().V1().Leases().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.observe(obj, false) },
		UpdateFunc: func(_, obj any) { m.observe(obj, false) },
		DeleteFunc: func(obj any) { m.observe(obj, true) },
	}); err != nil {
		return err
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	factory.Start(watchCtx.Done())
	defer factory.Shutdown()
	var loops sync.WaitGroup
	defer loops.Wait()
	defer stopWatch()
	loops.Add(2)
	go func() { defer loops.Done(); m.keep(watchCtx) }()
	go func() { defer loops.Done(); m.drain(watchCtx) }()

	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	done := make(chan error, 1)
	go func() { done <- run(runCtx) }()
	select {
	case err := <-done:
		if m.isLost() {
			return m.lostErr()
		}
		m.leave()
		return err
	case <-m.lostCh:
		cancelRun()
		if lost != nil {
			lost()
		}
		<-done
		return m.lostErr()
	}
}

func (m *Member) lostErr() error {
	if cause, ok := m.lostCause.Load().(error); ok {
		return fmt.Errorf("%w: %w", ErrLost, cause)
	}
	return ErrLost
}

// join creates the own Lease, retrying until it exists or ctx ends.
func (m *Member) join(ctx context.Context) error {
	now := metav1.NewMicroTime(time.Now())
	secs := int32(m.cfg.LeaseDuration / time.Second)
	if secs < 1 {
		secs = 1
	}
	want := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: m.name, Namespace: m.cfg.Namespace, Labels: map[string]string{RingLabel: m.cfg.Ring}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &m.cfg.Identity, LeaseDurationSeconds: &secs,
			AcquireTime: &now, RenewTime: &now},
	}
	for {
		got, err := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace).Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			m.writeMu.Lock()
			m.lease = got
			m.writeMu.Unlock()
			m.renewed.Store(time.Now().UnixNano())
			m.joined.Store(true)
			m.cfg.Log.Info("joined the ring", "ring", m.cfg.Ring)
			m.refresh()
			return nil
		}
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("sharding: member Lease %s/%s exists already: another member has this identity", m.cfg.Namespace, m.name)
		}
		m.cfg.Log.Info("could not create the member Lease; retrying", "error", err.Error())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(m.cfg.RetryPeriod):
		}
	}
}

// leave deletes the own Lease after a graceful stop.
func (m *Member) leave() {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.RetryPeriod)
	defer cancel()
	err := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace).Delete(ctx, m.name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		m.cfg.Log.Info("member Lease not deleted; the others take over once it expires", "error", err.Error())
		return
	}
	m.cfg.Log.Info("left the ring")
}

// keep renews the own Lease every retry period, refreshes the view (members expire by time
// alone) and removes Leases of members gone long ago, until ctx ends. It gives the member's
// place up once no renewal succeeded for the renew deadline.
func (m *Member) keep(ctx context.Context) {
	t := time.NewTicker(m.cfg.RetryPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := m.write(ctx, ""); err != nil && !m.isLost() {
			if apierrors.IsNotFound(err) {
				m.lose(errors.New("another member deleted this member's Lease: it saw it expire"))
				return
			}
			if since := time.Since(time.Unix(0, m.renewed.Load())); since > m.cfg.RenewDeadline {
				m.lose(fmt.Errorf("no renewal for %s: %w", since.Round(time.Millisecond), err))
				return
			}
			m.cfg.Log.Info("member Lease not renewed; retrying", "error", err.Error())
		}
		m.refresh()
		m.collect(ctx)
	}
}

// write renews the own Lease, with view as its view annotation when not empty. A conflict
// (the cached copy was stale) is retried once from a fresh read.
func (m *Member) write(ctx context.Context, view string) error {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	if m.isLost() {
		return ErrLost
	}
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)
	for attempt := 0; ; attempt++ {
		l := m.lease.DeepCopy()
		now := metav1.NewMicroTime(time.Now())
		l.Spec.RenewTime = &now
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		if view != "" {
			l.Annotations[ViewAnnotation] = view
		}
		m.mu.Lock()
		counts, _ := json.Marshal(m.counts)
		m.mu.Unlock()
		l.Annotations[CountsAnnotation] = string(counts)
		rctx, cancel := context.WithTimeout(ctx, m.cfg.RetryPeriod)
		got, err := leases.Update(rctx, l, metav1.UpdateOptions{})
		cancel()
		if err == nil {
			m.lease = got
			m.renewed.Store(time.Now().UnixNano())
			return nil
		}
		if !apierrors.IsConflict(err) || attempt > 0 {
			return err
		}
		fresh, gerr := leases.Get(ctx, m.name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		if fresh.Spec.HolderIdentity == nil || *fresh.Spec.HolderIdentity != m.cfg.Identity {
			return apierrors.NewNotFound(coordinationv1.Resource("leases"), m.name) // someone else's now
		}
		m.lease = fresh
	}
}

// observe records a member Lease's state as an event shows it.
func (m *Member) observe(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l.Name == m.name {
		return
	}
	m.mu.Lock()
	if deleted {
		delete(m.peers, l.Name)
		m.gone[l.Name] = true
	} else if !m.gone[l.Name] {
		p := m.peers[l.Name]
		if p == nil {
			p = &peer{}
			m.peers[l.Name] = p
		}
		renew := ""
		if l.Spec.RenewTime != nil {
			renew = l.Spec.RenewTime.String() + l.ResourceVersion
		}
		if renew != p.renew {
			p.renew, p.observedAt = renew, time.Now()
		}
		p.ack = l.Annotations[ViewAnnotation]
		p.duration = 15 * time.Second
		if l.Spec.LeaseDurationSeconds != nil {
			p.duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		}
		p.uid = string(l.UID)
		p.counts = nil
		_ = json.Unmarshal([]byte(l.Annotations[CountsAnnotation]), &p.counts) // none: counts nothing
	}
	m.mu.Unlock()
	m.refresh()
}

// refresh recomputes the view from the live members and whether the member is authorized
// under it.
func (m *Member) refresh() {
	var gained []func()
	var reshard string
	m.mu.Lock()
	now := time.Now()
	live := []string{}
	if m.joined.Load() && !m.isLost() {
		live = append(live, m.name)
	}
	for name, p := range m.peers {
		if now.Sub(p.observedAt) >= p.duration {
			m.gone[name] = true // expired: its member gave up; never a member again
			continue
		}
		live = append(live, name)
	}
	slices.Sort(live)
	s := m.cur.Load()
	if id := viewID(live); id != s.view {
		s = &state{view: id, ring: NewRing(live)}
		m.cur.Store(s)
		m.cfg.Metrics.viewChanged(len(live), s.ring.Share(m.name))
		m.cfg.Log.Info("ring view changed; pausing until every member has acknowledged it", "view", id, "members", len(live))
		reshard = id
		m.cachedView = "" // the caches follow the new view from now on, and must catch up
		select {
		case m.viewed <- struct{}{}:
		default:
		}
	}
	if !s.authorized && m.acked == s.view && s.view != "" && m.allAcked(s) && !m.isLost() &&
		(m.caches == nil || m.cachedView == s.view) {
		s = &state{view: s.view, ring: s.ring, authorized: true}
		m.cur.Store(s)
		gained = slices.Clone(m.gained)
		m.cfg.Metrics.authorized(true)
		m.cfg.Log.Info("every member acknowledged the view; reconciling this member's share", "view", s.view,
			"share", fmt.Sprintf("%.3f", s.ring.Share(m.name)))
	}
	caches := m.caches
	m.mu.Unlock()
	if reshard != "" && caches != nil {
		// After the view is stored: what the caches keep from now on follows it.
		settled := caches.Reshard()
		m.mu.Lock()
		if m.cur.Load().view == reshard {
			m.settle, m.settleView = settled, reshard
			m.settleGen++
		}
		m.mu.Unlock()
	}
	for _, f := range gained {
		go f()
	}
}

// allAcked reports whether every other member of s's view has published it. m.mu is held.
func (m *Member) allAcked(s *state) bool {
	for _, name := range s.ring.Members() {
		if name == m.name {
			continue
		}
		if p := m.peers[name]; p == nil || p.ack != s.view {
			return false
		}
	}
	return true
}

// viewID names a set of members: the same members, the same ID, on every member.
func viewID(members []string) string {
	if len(members) == 0 {
		return ""
	}
	return fmt.Sprintf("%016x", Hash(strings.Join(members, ",")))
}

// drain publishes each view the member adopts, once its reconciles in flight have finished.
func (m *Member) drain(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.viewed:
		}
		start := time.Now()
		for {
			m.mu.Lock()
			idle, view := m.inflight.Load() == 0, m.cur.Load().view
			m.mu.Unlock()
			if idle {
				if view == m.acked { // back to a view acknowledged before
					if !m.catchUp(ctx, view) {
						return
					}
					break
				}
				if err := m.write(ctx, view); err != nil {
					if ctx.Err() != nil || m.isLost() {
						return
					}
					m.cfg.Log.Info("view not acknowledged; retrying", "view", view, "error", err.Error())
				} else {
					m.mu.Lock()
					m.acked = view
					m.mu.Unlock()
					m.cfg.Metrics.drained(time.Since(start))
					m.refresh()
					if !m.catchUp(ctx, view) {
						return
					}
					break
				}
			}
			if time.Since(start) > m.cfg.DrainTimeout {
				m.lose(fmt.Errorf("reconciles in flight did not finish within %s of a view change", m.cfg.DrainTimeout))
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(drainPoll):
			}
		}
	}
}

// catchUp waits for the caches to catch up with view, then lets the member reconcile under
// it (refresh authorizes once every member acknowledged it too). It returns false when the
// member gave up or ctx ended; true as well when a newer view came (the drain handles that).
func (m *Member) catchUp(ctx context.Context, view string) bool {
	start := time.Now()
	for {
		m.mu.Lock()
		caches, settle, settleView, gen, cur := m.caches, m.settle, m.settleView, m.settleGen, m.cur.Load().view
		m.mu.Unlock()
		switch {
		case caches == nil:
			return true
		case cur != view:
			return true
		case settleView == view && settle():
			m.mu.Lock()
			if m.settleGen == gen { // else the view changed and came back meanwhile: wait again
				m.cachedView = view
			}
			m.mu.Unlock()
			m.cfg.Metrics.caughtUp(time.Since(start))
			m.refresh()
			return true
		case time.Since(start) > m.cfg.CacheTimeout:
			m.lose(fmt.Errorf("the caches did not catch up with a view change within %s", m.cfg.CacheTimeout))
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(drainPoll):
		}
	}
}

// drainPoll is how often a drain checks for reconciles still in flight.
const drainPoll = 10 * time.Millisecond

// collect deletes the Leases of members the view dropped, so that the ring's Leases do not
// pile up with every crash. A member that still renews after the others dropped it (it was
// paused, or cut off, for longer than the margin) finds its Lease gone at its next renewal
// and gives up; until then it is paused, since no other member acknowledges a view with it.
func (m *Member) collect(ctx context.Context) {
	type stale struct{ name, uid string }
	var todo []stale
	m.mu.Lock()
	for name, p := range m.peers {
		if m.gone[name] {
			todo = append(todo, stale{name, p.uid})
		}
	}
	m.mu.Unlock()
	for _, s := range todo {
		uid := types.UID(s.uid)
		err := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace).Delete(ctx, s.name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &uid}})
		if err == nil || apierrors.IsNotFound(err) {
			m.cfg.Log.Info("removed the Lease of a member gone", "lease", s.name)
		}
	}
}
