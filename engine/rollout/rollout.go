// Package rollout stages a change of a controller's hooks across its parents: which parents
// run the changed hooks (the candidate revision) and which the previous ones (the stable
// revision), when the share grows, and when a failure halts it. It decides only: the
// reconcile skeleton asks it which program a parent runs and reports each outcome, and the
// manager calls Advance, writes the status it returns, and then Commit: reconciles act on a
// step only once the cluster keeps it.
//
// Which parents run the candidate is a function of state the cluster keeps (the
// controller's status.hookRollout): a parent runs it when its rank, a digest of its uid and
// the candidate revision, is at most the cutoff. So an engine that restarts mid-rollout
// resumes with the same parents on the same revisions, and a rollout needs no write to any
// parent.
package rollout

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"metascript.dev/metascript/apis/v1alpha1"
)

// Hooks is what a hook revision covers: spec.hooks (the defined ones, by name),
// spec.script, and the spec of each hook library they load, as it was, so that an edit of a
// library is a new revision too and the previous one can be compiled again after a restart.
type Hooks struct {
	Hooks     map[string]*v1alpha1.Hook            `json:"hooks"`
	Script    *v1alpha1.SharedScript               `json:"script,omitempty"`
	Libraries map[string]*v1alpha1.HookLibrarySpec `json:"libraries,omitempty"`
}

// Revision names hooks by a digest of their JSON form, and returns that form (what
// HookRolloutStatus.Stable keeps).
func Revision(h Hooks) (string, []byte) {
	raw, err := json.Marshal(h)
	if err != nil {
		panic(fmt.Sprintf("rollout: hooks do not marshal: %v", err)) // plain API types always do
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:5]), raw
}

// Rank orders parents for a revision: the parents of lowest rank move first.
func Rank(uid types.UID, revision string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(revision))
	h.Write([]byte{0})
	h.Write([]byte(uid))
	return binary.BigEndian.Uint64(h.Sum(nil))
}

// Policy is a HookRolloutPolicy with its defaults filled in.
type Policy struct {
	Canary, Step     intstr.IntOrString
	Pause            time.Duration
	FailureThreshold int
	// MaxDeletes bounds the deletions of one candidate sync; negative: no bound.
	MaxDeletes int
	DryRun     bool
	Promote    string
}

// PolicyOf fills in p's defaults.
func PolicyOf(p *v1alpha1.HookRolloutPolicy) Policy {
	out := Policy{Canary: intstr.FromInt32(1), Step: intstr.FromString("25%"), Pause: 30 * time.Second,
		FailureThreshold: 1, MaxDeletes: -1, DryRun: p.DryRun, Promote: p.Promote}
	if p.Canary != nil {
		out.Canary = *p.Canary
	}
	if p.Step != nil {
		out.Step = *p.Step
	}
	if p.Pause != nil {
		out.Pause = p.Pause.Duration
	}
	if p.FailureThreshold != nil && *p.FailureThreshold > 0 {
		out.FailureThreshold = int(*p.FailureThreshold)
	}
	if p.MaxDeletesPerSync != nil {
		out.MaxDeletes = int(*p.MaxDeletesPerSync)
	}
	return out
}

// count resolves a count or percentage of n parents, rounding up, at least 1.
func count(v intstr.IntOrString, n int) (int, error) {
	c, err := intstr.GetScaledValueFromIntOrPercent(&v, n, true)
	if err != nil {
		return 0, err
	}
	return max(c, 1), nil
}

// Parent is one parent the controller selects.
type Parent struct {
	UID types.UID
	// Name is the parent as the status names it: namespace/name, or name.
	Name string
}

// Planned counts what a rendering of the candidate would write for one parent.
type Planned struct {
	Creates, Updates, Deletes int
	StatusChanged             bool
}

// Rollout is the staged change of one controller's hooks from a stable revision to a
// candidate. Its methods are safe for concurrent use: reconciles call Candidate, DryRun,
// MaxDeletes, Synced and Rendered; the manager calls Advance, Commit and SetPolicy.
//
// Advance changes the status to keep (st, cutoff, chosen); reconciles act on the stage that
// was last committed (live). Between the two, the status is written: a parent never runs a
// step the cluster does not keep yet, so an engine that restarts, resuming from the status,
// moves no parent back.
type Rollout struct {
	mu     sync.Mutex
	policy Policy
	st     v1alpha1.HookRolloutStatus
	cutoff uint64
	chosen bool // a cutoff was chosen: false until the first Advance of a new rollout
	live   stage

	synced   map[types.UID]bool   // candidate parents that synced successfully on it
	failed   map[types.UID]string // candidate parents whose last sync failed, and why
	firstBad []Parent             // failed parents in the order they failed
	planned  map[types.UID]planned
}

// stage is what decides which revision a parent runs.
type stage struct {
	phase  string
	cutoff uint64
	chosen bool
}

// runs reports whether, at this stage, the parent uid runs the candidate revision.
func (s stage) runs(uid types.UID, revision string) bool {
	switch {
	case s.phase == v1alpha1.RolloutComplete:
		return true
	case s.phase == v1alpha1.RolloutDryRun || !s.chosen:
		return false
	}
	return Rank(uid, revision) <= s.cutoff
}

// next is the stage of the status to keep.
func (r *Rollout) next() stage { return stage{phase: r.st.Phase, cutoff: r.cutoff, chosen: r.chosen} }

type planned struct {
	Planned
	name string
	err  string
}

// Complete returns the rollout of a controller whose parents all run revision, whose hooks
// stable holds.
func Complete(policy Policy, revision string, stable []byte) *Rollout {
	r := &Rollout{policy: policy, chosen: true, cutoff: math.MaxUint64, synced: map[types.UID]bool{}, failed: map[types.UID]string{},
		planned: map[types.UID]planned{},
		st: v1alpha1.HookRolloutStatus{Revision: revision, StableRevision: revision, Phase: v1alpha1.RolloutComplete,
			Stable: rawOf(stable)}}
	r.live = r.next()
	return r
}

// Start returns the rollout from stableRevision (whose hooks stable holds) to revision. When
// prior, the status the cluster keeps, is of the same two revisions, it resumes where prior
// stands; otherwise it begins: with a dry run when the policy asks for one, else with the
// canary step, chosen by the first Advance.
func Start(policy Policy, stableRevision string, stable []byte, revision string, prior *v1alpha1.HookRolloutStatus) *Rollout {
	r := &Rollout{policy: policy, synced: map[types.UID]bool{}, failed: map[types.UID]string{}, planned: map[types.UID]planned{},
		st: v1alpha1.HookRolloutStatus{Revision: revision, StableRevision: stableRevision, Phase: v1alpha1.RolloutProgressing,
			Stable: rawOf(stable)}}
	if prior != nil && prior.Revision == revision && prior.StableRevision == stableRevision {
		r.st = *prior.DeepCopy()
		r.st.Stable = rawOf(stable)
		if c, err := strconv.ParseUint(r.st.Cutoff, 16, 64); err == nil && r.st.Step > 0 {
			r.cutoff, r.chosen = c, true
		}
		if r.st.Phase == v1alpha1.RolloutComplete {
			r.cutoff, r.chosen = math.MaxUint64, true
		}
		r.live = r.next() // the cluster keeps it
		return r
	}
	if policy.DryRun {
		r.st.Phase = v1alpha1.RolloutDryRun
	}
	r.live = r.next() // no parent on the candidate: the same whether kept or not
	return r
}

func rawOf(b []byte) *runtime.RawExtension { return &runtime.RawExtension{Raw: slices.Clone(b)} }

// Status is the status as the last Advance left it.
func (r *Rollout) Status() v1alpha1.HookRolloutStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return *r.st.DeepCopy()
}

// Revision is the candidate revision: set by Start or Complete, never changed.
func (r *Rollout) Revision() string { return r.st.Revision }

// Staged reports whether parents may run two revisions: the candidate differs from the
// stable one and not every parent runs it yet.
func (r *Rollout) Staged() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live.phase != v1alpha1.RolloutComplete
}

// Commit makes reconciles act on the status the last Advance returned, once the cluster
// keeps it. Until then they act on the status committed before.
func (r *Rollout) Commit() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = r.next()
}

// SetPolicy replaces the policy: an edit of spec.hookRollout alone changes no revision. The
// next Advance acts on it (a dry run ended, a promotion).
func (r *Rollout) SetPolicy(p Policy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.policy = p
}

// Candidate reports whether the parent runs the candidate revision (as committed).
func (r *Rollout) Candidate(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live.runs(uid, r.st.Revision)
}

// candidate reports whether the parent runs the candidate revision in the status to keep.
func (r *Rollout) candidate(uid types.UID) bool { return r.next().runs(uid, r.st.Revision) }

// DryRun reports whether the candidate is only rendered (as committed).
func (r *Rollout) DryRun() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live.phase == v1alpha1.RolloutDryRun
}

// MaxDeletes is how many children one candidate sync may delete; negative: any number.
func (r *Rollout) MaxDeletes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live.phase == v1alpha1.RolloutComplete {
		return -1
	}
	return r.policy.MaxDeletes
}

// Synced records the outcome of a sync of parent on the candidate: err nil for success,
// else why it failed (a hook's failure, an invalid answer, a deletion past the bound).
func (r *Rollout) Synced(p Parent, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.st.Phase == v1alpha1.RolloutComplete {
		return
	}
	if err == nil {
		r.synced[p.UID] = true
		delete(r.failed, p.UID)
		return
	}
	delete(r.synced, p.UID)
	if _, ok := r.failed[p.UID]; !ok {
		r.firstBad = append(r.firstBad, p)
	}
	r.failed[p.UID] = err.Error()
}

// Rendered records what the candidate would do to parent in a dry run, or why it failed.
func (r *Rollout) Rendered(p Parent, plan Planned, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := planned{Planned: plan, name: p.Name}
	if err != nil {
		e = planned{name: p.Name, err: err.Error()}
	}
	r.planned[p.UID] = e
}

// Advance moves the rollout on at now, over the parents the controller selects, and returns
// the status to keep and whether the set of parents running the candidate changed (they are
// then to be synced again). A step lasts at least the policy's pause and until every parent
// it moved has synced successfully; the failure threshold halts the rollout; every parent on
// the candidate completes it.
func (r *Rollout) Advance(now time.Time, parents []Parent) (v1alpha1.HookRolloutStatus, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	present := make(map[types.UID]bool, len(parents))
	for _, p := range parents {
		present[p.UID] = true
	}
	r.prune(present)
	moved := false
	var err error
	switch {
	case r.st.Phase == v1alpha1.RolloutComplete:
	case r.policy.Promote != "" && r.policy.Promote == r.st.Revision:
		r.complete()
		moved = true
	case r.st.Phase == v1alpha1.RolloutDryRun:
		if !r.policy.DryRun {
			r.st.Phase, r.st.DryRun = v1alpha1.RolloutProgressing, nil
			break
		}
		r.st.DryRun = r.dryRunSummary(present)
	}
	if r.st.Phase == v1alpha1.RolloutProgressing || r.st.Phase == v1alpha1.RolloutHalted {
		m, e := r.progress(now, parents)
		moved, err = moved || m, e
	}
	r.count(parents)
	return *r.st.DeepCopy(), moved, err
}

// progress is Advance for a rollout in steps.
func (r *Rollout) progress(now time.Time, parents []Parent) (bool, error) {
	n := len(parents)
	if r.st.Phase == v1alpha1.RolloutHalted {
		return false, nil // until the hooks change again or the policy promotes the revision
	}
	if n == 0 {
		r.complete() // nothing to stage
		return false, nil
	}
	if len(r.failed) >= r.policy.FailureThreshold {
		r.st.Phase = v1alpha1.RolloutHalted
		bad := r.firstFailed()
		r.st.FailedParent, r.st.Message = bad.Name, r.failed[bad.UID]
		r.st.Failures = int32(len(r.failed))
		return false, nil
	}
	ranks := make([]uint64, n)
	for i, p := range parents {
		ranks[i] = Rank(p.UID, r.st.Revision)
	}
	slices.Sort(ranks)
	if !r.chosen {
		c, err := count(r.policy.Canary, n)
		if err != nil {
			return false, fmt.Errorf("spec.hookRollout.canary: %w", err)
		}
		r.step(now, ranks, c)
		r.st.CanaryParents = r.updatedNames(parents, 10)
		return true, nil
	}
	updated, synced := r.tally(parents)
	if synced < updated || now.Before(r.st.StepStarted.Add(r.policy.Pause)) && updated < n {
		return false, nil
	}
	if updated >= n {
		r.complete()
		return false, nil
	}
	s, err := count(r.policy.Step, n)
	if err != nil {
		return false, fmt.Errorf("spec.hookRollout.step: %w", err)
	}
	r.step(now, ranks, updated+s)
	return true, nil
}

// step moves the cutoff to cover the first k parents by rank (all of them when k ≥ n).
func (r *Rollout) step(now time.Time, ranks []uint64, k int) {
	r.chosen = true
	r.st.Step++
	r.st.StepStarted = &metav1.Time{Time: now}
	switch {
	case k >= len(ranks):
		r.cutoff = math.MaxUint64
	default:
		r.cutoff = ranks[k-1]
	}
	r.st.Cutoff = strconv.FormatUint(r.cutoff, 16)
}

// complete makes the candidate the stable revision.
func (r *Rollout) complete() {
	r.st.Phase, r.st.StableRevision = v1alpha1.RolloutComplete, r.st.Revision
	r.cutoff, r.chosen, r.st.Cutoff = math.MaxUint64, true, ""
	r.st.FailedParent, r.st.Message, r.st.Failures, r.st.StepStarted, r.st.DryRun = "", "", 0, nil, nil
}

// count fills in the status's counts.
func (r *Rollout) count(parents []Parent) {
	r.st.Parents, r.st.UpdatedParents, r.st.SyncedParents = int32(len(parents)), 0, 0
	if r.st.Phase == v1alpha1.RolloutComplete {
		r.st.UpdatedParents = int32(len(parents))
		return
	}
	updated, synced := r.tally(parents)
	r.st.UpdatedParents, r.st.SyncedParents = int32(updated), int32(synced)
	if r.st.Phase != v1alpha1.RolloutHalted {
		r.st.Failures = int32(len(r.failed))
	}
}

// tally counts the parents on the candidate, and those of them whose last sync on it
// succeeded.
func (r *Rollout) tally(parents []Parent) (updated, synced int) {
	for _, p := range parents {
		if r.candidate(p.UID) {
			updated++
			if r.synced[p.UID] {
				synced++
			}
		}
	}
	return updated, synced
}

// updatedNames names the first parents on the candidate, at most limit, by rank.
func (r *Rollout) updatedNames(parents []Parent, limit int) []string {
	var on []Parent
	for _, p := range parents {
		if r.candidate(p.UID) {
			on = append(on, p)
		}
	}
	slices.SortFunc(on, func(a, b Parent) int {
		return cmp.Compare(Rank(a.UID, r.st.Revision), Rank(b.UID, r.st.Revision))
	})
	var names []string
	for _, p := range on[:min(limit, len(on))] {
		names = append(names, p.Name)
	}
	return names
}

// firstFailed is the parent that failed first of those failing now.
func (r *Rollout) firstFailed() Parent {
	for _, p := range r.firstBad {
		if _, ok := r.failed[p.UID]; ok {
			return p
		}
	}
	return Parent{}
}

// prune forgets the parents that are gone.
func (r *Rollout) prune(present map[types.UID]bool) {
	for uid := range r.synced {
		if !present[uid] {
			delete(r.synced, uid)
		}
	}
	for uid := range r.failed {
		if !present[uid] {
			delete(r.failed, uid)
		}
	}
	for uid := range r.planned {
		if !present[uid] {
			delete(r.planned, uid)
		}
	}
	r.firstBad = slices.DeleteFunc(r.firstBad, func(p Parent) bool { return !present[p.UID] })
}

// dryRunSummary sums the renderings of the parents present.
func (r *Rollout) dryRunSummary(present map[types.UID]bool) *v1alpha1.HookDryRun {
	out := &v1alpha1.HookDryRun{Revision: r.st.Revision}
	var failed []planned
	for uid, p := range r.planned {
		if !present[uid] {
			continue
		}
		out.Parents++
		if p.err != "" {
			out.Failed++
			failed = append(failed, p)
			continue
		}
		out.Creates += int32(p.Creates)
		out.Updates += int32(p.Updates)
		out.Deletes += int32(p.Deletes)
		if p.StatusChanged {
			out.StatusChanges++
		}
	}
	if len(failed) > 0 {
		first := slices.MinFunc(failed, func(a, b planned) int { return cmp.Compare(a.name, b.name) })
		out.FailedParent, out.Message = first.name, first.err
	}
	return out
}
