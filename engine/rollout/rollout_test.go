package rollout

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"metascript.dev/metascript/apis/v1alpha1"
)

const (
	stableRev = "5151515151"
	candRev   = "cacacacaca"
)

var (
	t0         = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	stableHook = []byte(`{"hooks":{"sync":{"starlark":{"source":"def sync(r): return {}"}}}}`)
)

// parentsOf returns n parents uid-00…, named ns/p0….
func parentsOf(n int) []Parent {
	ps := make([]Parent, n)
	for i := range ps {
		ps[i] = Parent{UID: types.UID(fmt.Sprintf("uid-%02d", i)), Name: fmt.Sprintf("ns/p%d", i)}
	}
	return ps
}

// lowestRanked names the k parents of lowest rank for revision, lowest first.
func lowestRanked(ps []Parent, revision string, k int) []string {
	sorted := slices.Clone(ps)
	slices.SortFunc(sorted, func(a, b Parent) int {
		ra, rb := Rank(a.UID, revision), Rank(b.UID, revision)
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
	var names []string
	for _, p := range sorted[:k] {
		names = append(names, p.Name)
	}
	return names
}

// candidates names the parents on the candidate, sorted by name.
func candidates(r *Rollout, ps []Parent) []string {
	var names []string
	for _, p := range ps {
		if r.Candidate(p.UID) {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	return names
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// policy is PolicyOf with canary, step and pause set, the rest default.
func policy(canary, step intstr.IntOrString, pause time.Duration) Policy {
	return PolicyOf(&v1alpha1.HookRolloutPolicy{Canary: &canary, Step: &step, Pause: &metav1.Duration{Duration: pause}})
}

// syncAll reports a successful sync of every parent on the candidate.
func syncAll(r *Rollout, ps []Parent) {
	for _, p := range ps {
		if r.Candidate(p.UID) {
			r.Synced(p, nil)
		}
	}
}

// advance is the manager's turn: Advance, then Commit once the status is written.
func advance(t *testing.T, r *Rollout, now time.Time, ps []Parent) (v1alpha1.HookRolloutStatus, bool) {
	t.Helper()
	st, moved, err := r.Advance(now, ps)
	if err != nil {
		t.Fatalf("Advance: %v", err)
	}
	r.Commit()
	return st, moved
}

func TestRevision(t *testing.T) {
	hooks := func(src string, script string) Hooks {
		h := Hooks{Hooks: map[string]*v1alpha1.Hook{
			"sync": {Starlark: &v1alpha1.InlineScript{Source: src}, Version: "v2"},
		}}
		if script != "" {
			h.Script = &v1alpha1.SharedScript{JavaScript: &v1alpha1.ScriptSource{Source: script}}
		}
		return h
	}
	base := hooks("def sync(r): return {}", "")
	tests := []struct {
		name string
		a, b Hooks
		same bool
	}{
		{name: "same hooks", a: base, b: hooks("def sync(r): return {}", ""), same: true},
		{name: "changed source", a: base, b: hooks("def sync(r): return {'x': 1}", "")},
		{name: "added shared script", a: base, b: hooks("def sync(r): return {}", "function f() {}")},
		{name: "changed shared script", a: hooks("", "function f() {}"), b: hooks("", "function g() {}")},
		{name: "added hook", a: base, b: Hooks{Hooks: map[string]*v1alpha1.Hook{
			"sync":     base.Hooks["sync"],
			"finalize": {Starlark: &v1alpha1.InlineScript{Source: "def finalize(r): return {}"}},
		}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ra, rawA := Revision(tc.a)
			rb, _ := Revision(tc.b)
			if (ra == rb) != tc.same {
				t.Errorf("revisions %q and %q: same = %v, want %v", ra, rb, ra == rb, tc.same)
			}
			if len(ra) != 10 {
				t.Errorf("revision %q: want 10 hex digits", ra)
			}
			var back Hooks
			if err := json.Unmarshal(rawA, &back); err != nil {
				t.Fatalf("the returned form does not decode: %v", err)
			}
			if !reflect.DeepEqual(back, tc.a) {
				t.Errorf("decoded %+v, want %+v", back, tc.a)
			}
			if again, _ := Revision(back); again != ra {
				t.Errorf("decoded hooks have revision %q, want %q", again, ra)
			}
		})
	}
}

func TestPolicyOf(t *testing.T) {
	three, five, zero := int32(3), int32(5), int32(0)
	canary, step := intstr.FromString("10%"), intstr.FromInt32(4)
	tests := []struct {
		name string
		in   v1alpha1.HookRolloutPolicy
		want Policy
	}{
		{name: "defaults", in: v1alpha1.HookRolloutPolicy{},
			want: Policy{Canary: intstr.FromInt32(1), Step: intstr.FromString("25%"), Pause: 30 * time.Second,
				FailureThreshold: 1, MaxDeletes: -1}},
		{name: "explicit", in: v1alpha1.HookRolloutPolicy{Canary: &canary, Step: &step, Pause: &metav1.Duration{Duration: time.Minute},
			FailureThreshold: &three, MaxDeletesPerSync: &five, DryRun: true, Promote: candRev},
			want: Policy{Canary: canary, Step: step, Pause: time.Minute, FailureThreshold: 3, MaxDeletes: 5,
				DryRun: true, Promote: candRev}},
		{name: "zero threshold keeps the default, zero deletes is a bound",
			in: v1alpha1.HookRolloutPolicy{FailureThreshold: &zero, MaxDeletesPerSync: &zero, Pause: &metav1.Duration{}},
			want: Policy{Canary: intstr.FromInt32(1), Step: intstr.FromString("25%"), Pause: 0,
				FailureThreshold: 1, MaxDeletes: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := PolicyOf(&tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PolicyOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCanary(t *testing.T) {
	ps := parentsOf(10)
	tests := []struct {
		canary intstr.IntOrString
		want   int
	}{
		{canary: intstr.FromInt32(2), want: 2},
		{canary: intstr.FromString("20%"), want: 2},
		{canary: intstr.FromString("1%"), want: 1},
		{canary: intstr.FromString("35%"), want: 4},
		{canary: intstr.FromInt32(0), want: 1},
		{canary: intstr.FromInt32(12), want: 10},
	}
	for _, tc := range tests {
		t.Run(tc.canary.String(), func(t *testing.T) {
			r := Start(policy(tc.canary, intstr.FromInt32(1), time.Second), stableRev, stableHook, candRev, nil)
			if got := candidates(r, ps); got != nil {
				t.Fatalf("before the first Advance %v run the candidate", got)
			}
			if !r.Staged() || r.DryRun() {
				t.Fatalf("Staged = %v, DryRun = %v; want true, false", r.Staged(), r.DryRun())
			}
			st, moved := advance(t, r, t0, ps)
			if !moved || st.Step != 1 || st.Phase != v1alpha1.RolloutProgressing {
				t.Errorf("moved %v, step %d, phase %s; want true, 1, Progressing", moved, st.Step, st.Phase)
			}
			want := lowestRanked(ps, candRev, tc.want)
			if got := candidates(r, ps); !slices.Equal(got, sortedCopy(want)) {
				t.Errorf("candidates %v, want the %d of lowest rank %v", got, tc.want, want)
			}
			if !slices.Equal(st.CanaryParents, want) {
				t.Errorf("CanaryParents %v, want %v", st.CanaryParents, want)
			}
			if st.Parents != 10 || st.UpdatedParents != int32(tc.want) || st.SyncedParents != 0 {
				t.Errorf("counts %d/%d/%d, want 10/%d/0", st.Parents, st.UpdatedParents, st.SyncedParents, tc.want)
			}
			if !st.StepStarted.Time.Equal(t0) {
				t.Errorf("StepStarted %v, want %v", st.StepStarted, t0)
			}
		})
	}
}

// Reconciles act on a step only once it is committed (the manager wrote the status): the
// canary, a later step and the promotion each leave every parent where it was until then.
func TestStepTakesEffectOnCommit(t *testing.T) {
	ps := parentsOf(10)
	pol := policy(intstr.FromInt32(2), intstr.FromInt32(3), 0)
	pol.MaxDeletes = 1
	r := Start(pol, stableRev, stableHook, candRev, nil)
	uncommitted := func(what string, wantCandidates int, staged bool) {
		t.Helper()
		if got := candidates(r, ps); len(got) != wantCandidates || r.Staged() != staged || r.MaxDeletes() == -1 {
			t.Fatalf("%s, not committed: candidates %v, Staged %v, MaxDeletes %d; want %d, %v, the bound",
				what, got, r.Staged(), r.MaxDeletes(), wantCandidates, staged)
		}
	}
	st, moved, err := r.Advance(t0, ps)
	if err != nil || !moved || st.Step != 1 || st.UpdatedParents != 2 {
		t.Fatalf("canary: moved %v, step %d, updated %d, %v", moved, st.Step, st.UpdatedParents, err)
	}
	uncommitted("canary", 0, true)
	// Written or not, the next Advance starts from the status it returned: no parent ran
	// the canary, so no step follows.
	if st, moved := advanceOnly(t, r, t0.Add(time.Minute), ps); moved || st.Step != 1 {
		t.Fatalf("an Advance before the canary synced moved to step %d", st.Step)
	}
	r.Commit()
	if got := candidates(r, ps); len(got) != 2 {
		t.Fatalf("canary committed: candidates %v, want 2", got)
	}
	syncAll(r, ps)
	if st, moved := advanceOnly(t, r, t0.Add(time.Minute), ps); !moved || st.Step != 2 || st.UpdatedParents != 5 {
		t.Fatalf("step 2: moved %v, step %d, updated %d; want true, 2, 5", moved, st.Step, st.UpdatedParents)
	}
	uncommitted("step 2", 2, true)
	r.Commit()
	pol.Promote = candRev
	r.SetPolicy(pol)
	if st, moved := advanceOnly(t, r, t0.Add(2*time.Minute), ps); !moved || st.Phase != v1alpha1.RolloutComplete {
		t.Fatalf("promote: moved %v, phase %s", moved, st.Phase)
	}
	uncommitted("promotion", 5, true)
	r.Commit()
	if got := candidates(r, ps); len(got) != 10 || r.Staged() || r.MaxDeletes() != -1 {
		t.Fatalf("promotion committed: candidates %v, Staged %v, MaxDeletes %d", got, r.Staged(), r.MaxDeletes())
	}
}

// advanceOnly is Advance with no Commit: the manager could not write the status.
func advanceOnly(t *testing.T, r *Rollout, now time.Time, ps []Parent) (v1alpha1.HookRolloutStatus, bool) {
	t.Helper()
	st, moved, err := r.Advance(now, ps)
	if err != nil {
		t.Fatalf("Advance: %v", err)
	}
	return st, moved
}

func TestSteps(t *testing.T) {
	ps := parentsOf(10)
	const pause = 30 * time.Second
	tests := []struct {
		name string
		step intstr.IntOrString
		want []int // parents on the candidate after each step
	}{
		{name: "count", step: intstr.FromInt32(3), want: []int{2, 5, 8, 10}},
		{name: "percent", step: intstr.FromString("40%"), want: []int{2, 6, 10}},
		{name: "percent rounded up", step: intstr.FromString("25%"), want: []int{2, 5, 8, 10}},
		{name: "step past the end", step: intstr.FromInt32(20), want: []int{2, 10}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := policy(intstr.FromInt32(2), tc.step, pause)
			p.MaxDeletes = 3
			r := Start(p, stableRev, stableHook, candRev, nil)
			now := t0
			advance(t, r, now, ps)
			var prev []string // the candidates of the step before
			for i, want := range tc.want {
				got := candidates(r, ps)
				if wantNames := sortedCopy(lowestRanked(ps, candRev, want)); !slices.Equal(got, wantNames) {
					t.Fatalf("step %d: candidates %v, want %v", i+1, got, wantNames)
				}
				if r.MaxDeletes() != 3 {
					t.Errorf("step %d: MaxDeletes %d, want the policy's 3", i+1, r.MaxDeletes())
				}
				// Every updated parent but one this step moved synced: the step waits, however
				// long. (Parents an earlier step moved synced then.)
				var last Parent
				for _, q := range ps {
					if r.Candidate(q.UID) && !slices.Contains(prev, q.Name) {
						if last.UID != "" {
							r.Synced(last, nil)
						}
						last = q
					}
				}
				prev = got
				st, moved := advance(t, r, now.Add(time.Hour), ps)
				if moved || st.Step != int32(i+1) || st.SyncedParents != int32(want-1) || st.Phase != v1alpha1.RolloutProgressing {
					t.Fatalf("step %d, one parent not synced: moved %v, step %d, synced %d, phase %s; want false, %d, %d, Progressing",
						i+1, moved, st.Step, st.SyncedParents, st.Phase, i+1, want-1)
				}
				r.Synced(last, nil)
				if want == len(ps) {
					break // the last step waits for no pause: checked below
				}
				// All synced, the pause not passed: the step waits.
				st, moved = advance(t, r, now.Add(pause-time.Nanosecond), ps)
				if moved || st.Step != int32(i+1) || st.SyncedParents != int32(want) {
					t.Fatalf("step %d, in the pause: moved %v, step %d, synced %d; want false, %d, %d",
						i+1, moved, st.Step, st.SyncedParents, i+1, want)
				}
				now = now.Add(pause)
				st, moved = advance(t, r, now, ps)
				if !moved || st.Step != int32(i+2) || st.UpdatedParents != int32(tc.want[i+1]) || !st.StepStarted.Time.Equal(now) {
					t.Fatalf("step %d, synced and paused: moved %v, step %d, updated %d, started %v; want true, %d, %d, %v",
						i+1, moved, st.Step, st.UpdatedParents, st.StepStarted, i+2, tc.want[i+1], now)
				}
			}
			if !r.Staged() {
				t.Fatal("complete before the last step synced")
			}
			st, moved := advance(t, r, now, ps)
			if moved || st.Phase != v1alpha1.RolloutComplete || st.StableRevision != candRev || st.Revision != candRev {
				t.Fatalf("after the last step synced: moved %v, phase %s, stable %s; want false, Complete, %s",
					moved, st.Phase, st.StableRevision, candRev)
			}
			if st.Cutoff != "" || st.StepStarted != nil || st.UpdatedParents != 10 {
				t.Errorf("complete status: cutoff %q, started %v, updated %d; want empty, nil, 10", st.Cutoff, st.StepStarted, st.UpdatedParents)
			}
			if r.Staged() || r.MaxDeletes() != -1 || len(candidates(r, ps)) != 10 {
				t.Errorf("complete: Staged %v, MaxDeletes %d, %d candidates; want false, -1, 10",
					r.Staged(), r.MaxDeletes(), len(candidates(r, ps)))
			}
			// A parent that joins later, and a failure reported after, change nothing.
			more := parentsOf(12)
			r.Synced(more[11], errors.New("late"))
			st, _ = advance(t, r, now.Add(time.Hour), more)
			if st.Phase != v1alpha1.RolloutComplete || !r.Candidate(more[11].UID) || st.Failures != 0 || st.UpdatedParents != 12 {
				t.Errorf("after completion: phase %s, new parent candidate %v, failures %d, updated %d",
					st.Phase, r.Candidate(more[11].UID), st.Failures, st.UpdatedParents)
			}
		})
	}
}

// halted runs a rollout of 10 parents with canary 2 and threshold to its first step, fails the
// canaries named by fail (indexes into the canaries by rank) in order, and advances.
func halted(t *testing.T, threshold int32, fail []int) (*Rollout, []Parent, []Parent, v1alpha1.HookRolloutStatus) {
	t.Helper()
	ps := parentsOf(10)
	canary := intstr.FromInt32(2)
	r := Start(PolicyOf(&v1alpha1.HookRolloutPolicy{Canary: &canary, FailureThreshold: &threshold}), stableRev, stableHook, candRev, nil)
	advance(t, r, t0, ps)
	var canaries []Parent
	for _, name := range lowestRanked(ps, candRev, 2) {
		i := slices.IndexFunc(ps, func(p Parent) bool { return p.Name == name })
		canaries = append(canaries, ps[i])
	}
	for _, i := range fail {
		r.Synced(canaries[i], fmt.Errorf("hook sync of %s failed", canaries[i].Name))
	}
	st, moved := advance(t, r, t0.Add(time.Hour), ps)
	if moved {
		t.Errorf("a failure moved parents")
	}
	return r, ps, canaries, st
}

func TestFailureThreshold(t *testing.T) {
	tests := []struct {
		name      string
		threshold int32
		fail      []int
		halted    bool
		first     int // the canary FailedParent names
		failures  int32
	}{
		{name: "one failure, threshold 1", threshold: 1, fail: []int{1}, halted: true, first: 1, failures: 1},
		{name: "one parent failing twice, threshold 2", threshold: 2, fail: []int{0, 0}, failures: 1},
		{name: "two parents failing, threshold 2", threshold: 2, fail: []int{1, 0}, halted: true, first: 1, failures: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ps, canaries, st := halted(t, tc.threshold, tc.fail)
			if st.Failures != tc.failures {
				t.Errorf("Failures %d, want %d", st.Failures, tc.failures)
			}
			if !tc.halted {
				if st.Phase != v1alpha1.RolloutProgressing || st.FailedParent != "" {
					t.Errorf("phase %s, failed parent %q; want Progressing, none", st.Phase, st.FailedParent)
				}
				return
			}
			bad := canaries[tc.first]
			want := fmt.Sprintf("hook sync of %s failed", bad.Name)
			if st.Phase != v1alpha1.RolloutHalted || st.FailedParent != bad.Name || st.Message != want {
				t.Fatalf("phase %s, failed parent %q, message %q; want Halted, %q, %q", st.Phase, st.FailedParent, st.Message, bad.Name, want)
			}
			// The halt is sticky: every parent syncing well later moves nothing on.
			before := candidates(r, ps)
			for _, p := range canaries {
				r.Synced(p, nil)
			}
			st, moved := advance(t, r, t0.Add(24*time.Hour), ps)
			if moved || st.Phase != v1alpha1.RolloutHalted || st.Step != 1 || st.FailedParent != bad.Name ||
				st.Message != want || st.Failures != tc.failures {
				t.Errorf("after later successes: moved %v, phase %s, step %d, failed %q %q, failures %d; want the halt kept",
					moved, st.Phase, st.Step, st.FailedParent, st.Message, st.Failures)
			}
			if got := candidates(r, ps); !slices.Equal(got, before) {
				t.Errorf("candidates %v, want %v kept", got, before)
			}
			if !r.Staged() {
				t.Error("a halted rollout is not staged")
			}
		})
	}
}

func TestPromote(t *testing.T) {
	tests := []struct {
		name     string
		promote  string
		complete bool
	}{
		{name: "the candidate revision", promote: candRev, complete: true},
		{name: "another revision", promote: stableRev},
		{name: "none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ps, _, st := halted(t, 1, []int{0})
			if st.Phase != v1alpha1.RolloutHalted {
				t.Fatalf("phase %s, want Halted", st.Phase)
			}
			r.SetPolicy(PolicyOf(&v1alpha1.HookRolloutPolicy{Promote: tc.promote}))
			st, moved := advance(t, r, t0.Add(2*time.Hour), ps)
			if !tc.complete {
				if moved || st.Phase != v1alpha1.RolloutHalted || len(candidates(r, ps)) != 2 {
					t.Errorf("moved %v, phase %s, %d candidates; want false, Halted, 2", moved, st.Phase, len(candidates(r, ps)))
				}
				return
			}
			if !moved || st.Phase != v1alpha1.RolloutComplete || st.StableRevision != candRev {
				t.Fatalf("moved %v, phase %s, stable %s; want true, Complete, %s", moved, st.Phase, st.StableRevision, candRev)
			}
			if st.FailedParent != "" || st.Message != "" || st.Failures != 0 || st.UpdatedParents != 10 {
				t.Errorf("complete status keeps %q %q %d, updated %d", st.FailedParent, st.Message, st.Failures, st.UpdatedParents)
			}
			if len(candidates(r, ps)) != 10 || r.MaxDeletes() != -1 {
				t.Errorf("%d candidates, MaxDeletes %d; want 10, -1", len(candidates(r, ps)), r.MaxDeletes())
			}
		})
	}
}

func TestDryRun(t *testing.T) {
	all := parentsOf(10)
	ps := all[1:9] // ns/p0 and ns/p9 are gone
	p := policy(intstr.FromInt32(1), intstr.FromInt32(1), time.Second)
	p.DryRun = true
	r := Start(p, stableRev, stableHook, candRev, nil)
	if !r.DryRun() || !r.Staged() {
		t.Fatalf("DryRun %v, Staged %v; want true, true", r.DryRun(), r.Staged())
	}
	r.Rendered(all[3], Planned{}, errors.New("replaced by the next rendering"))
	r.Rendered(all[3], Planned{Creates: 1, Updates: 2, StatusChanged: true}, nil)
	r.Rendered(all[1], Planned{Creates: 2, Deletes: 3}, nil)
	r.Rendered(all[7], Planned{Creates: 50}, errors.New("p7 failed"))
	r.Rendered(all[5], Planned{}, errors.New("p5 failed"))
	r.Rendered(all[6], Planned{Updates: 1}, nil)
	r.Rendered(all[0], Planned{}, errors.New("p0 is gone"))
	r.Rendered(all[9], Planned{Creates: 100, Deletes: 100, StatusChanged: true}, nil)
	st, moved := advance(t, r, t0, ps)
	want := &v1alpha1.HookDryRun{Revision: candRev, Parents: 5, Failed: 2, FailedParent: "ns/p5", Message: "p5 failed",
		Creates: 3, Updates: 3, Deletes: 3, StatusChanges: 1}
	if moved || st.Phase != v1alpha1.RolloutDryRun || !reflect.DeepEqual(st.DryRun, want) {
		t.Fatalf("moved %v, phase %s, dry run %+v; want false, DryRun, %+v", moved, st.Phase, st.DryRun, want)
	}
	if got := candidates(r, all); got != nil {
		t.Fatalf("in a dry run %v run the candidate", got)
	}
	if st.Step != 0 || st.UpdatedParents != 0 || st.Parents != int32(len(ps)) {
		t.Errorf("step %d, updated %d, parents %d; want 0, 0, %d", st.Step, st.UpdatedParents, st.Parents, len(ps))
	}

	// The dry run ended: the rollout starts, with its canary.
	p.DryRun = false
	r.SetPolicy(p)
	st, moved = advance(t, r, t0.Add(time.Minute), ps)
	if st.Phase != v1alpha1.RolloutProgressing || st.DryRun != nil || r.DryRun() {
		t.Fatalf("after the dry run: phase %s, dry run %+v; want Progressing, none", st.Phase, st.DryRun)
	}
	if !moved || st.Step != 1 || !slices.Equal(candidates(r, ps), lowestRanked(ps, candRev, 1)) {
		t.Errorf("moved %v, step %d, candidates %v; want true, 1, %v", moved, st.Step, candidates(r, ps), lowestRanked(ps, candRev, 1))
	}
}

func TestResume(t *testing.T) {
	ps := parentsOf(10)
	p := policy(intstr.FromInt32(2), intstr.FromInt32(3), time.Minute)
	// run returns a rollout taken through steps steps, its canary failing when fail.
	run := func(steps int, fail bool) *Rollout {
		r := Start(p, stableRev, stableHook, candRev, nil)
		now := t0
		for i := range steps {
			if i > 0 {
				syncAll(r, ps)
				now = now.Add(time.Minute)
			}
			advance(t, r, now, ps)
		}
		if fail {
			r.Synced(ps[slices.IndexFunc(ps, func(q Parent) bool { return r.Candidate(q.UID) })], errors.New("failed"))
			advance(t, r, now, ps)
		}
		return r
	}
	tests := []struct {
		name  string
		from  *Rollout
		phase string
		n     int // candidates
	}{
		{name: "canary", from: run(1, false), phase: v1alpha1.RolloutProgressing, n: 2},
		{name: "second step", from: run(2, false), phase: v1alpha1.RolloutProgressing, n: 5},
		{name: "fourth step", from: run(4, false), phase: v1alpha1.RolloutProgressing, n: 10},
		{name: "halted", from: run(2, true), phase: v1alpha1.RolloutHalted, n: 5},
		{name: "not started", from: run(0, false), phase: v1alpha1.RolloutProgressing, n: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prior := tc.from.Status()
			r := Start(p, stableRev, stableHook, candRev, &prior)
			if got, want := candidates(r, ps), candidates(tc.from, ps); !slices.Equal(got, want) || len(got) != tc.n {
				t.Fatalf("resumed candidates %v, want %v (%d)", got, want, tc.n)
			}
			if st := r.Status(); !reflect.DeepEqual(st, prior) || st.Phase != tc.phase {
				t.Errorf("resumed status %+v, want %+v", st, prior)
			}
			if tc.n == 0 {
				return
			}
			// Resumed, it waits for the parents to sync again rather than choosing anew.
			st, moved := advance(t, r, t0.Add(time.Hour), ps)
			if moved || st.Step != prior.Step || !slices.Equal(candidates(r, ps), candidates(tc.from, ps)) {
				t.Errorf("resumed Advance: moved %v, step %d; want false, %d, candidates kept", moved, st.Step, prior.Step)
			}
		})
	}

	t.Run("complete", func(t *testing.T) {
		r := Start(p, stableRev, stableHook, candRev, nil)
		r.SetPolicy(PolicyOf(&v1alpha1.HookRolloutPolicy{Promote: candRev}))
		prior, _ := advance(t, r, t0, ps)
		resumed := Start(p, candRev, stableHook, candRev, &prior)
		if resumed.Staged() || len(candidates(resumed, ps)) != 10 {
			t.Errorf("resumed complete: Staged %v, %d candidates; want false, 10", resumed.Staged(), len(candidates(resumed, ps)))
		}
	})

	prior := run(2, false).Status()
	fresh := []struct {
		name              string
		stable, candidate string
	}{
		{name: "another revision", stable: stableRev, candidate: "0123456789"},
		{name: "another stable revision", stable: "9876543210", candidate: candRev},
	}
	for _, tc := range fresh {
		t.Run(tc.name+" starts fresh", func(t *testing.T) {
			r := Start(p, tc.stable, stableHook, tc.candidate, &prior)
			st := r.Status()
			if got := candidates(r, ps); got != nil {
				t.Errorf("candidates %v before the first Advance", got)
			}
			if st.Step != 0 || st.Cutoff != "" || st.Revision != tc.candidate || st.StableRevision != tc.stable ||
				st.Phase != v1alpha1.RolloutProgressing {
				t.Errorf("status %+v, want a fresh one", st)
			}
			st, moved := advance(t, r, t0, ps)
			if !moved || st.Step != 1 || len(candidates(r, ps)) != 2 {
				t.Errorf("first Advance: moved %v, step %d, %d candidates; want true, 1, 2", moved, st.Step, len(candidates(r, ps)))
			}
		})
	}
}

func TestZeroParents(t *testing.T) {
	r := Start(PolicyOf(&v1alpha1.HookRolloutPolicy{}), stableRev, stableHook, candRev, nil)
	var st v1alpha1.HookRolloutStatus
	for range 2 {
		st, _ = advance(t, r, t0, nil)
		if st.Phase == v1alpha1.RolloutComplete {
			break
		}
	}
	if st.Phase != v1alpha1.RolloutComplete || st.StableRevision != candRev || r.Staged() {
		t.Errorf("phase %s, stable %s, staged %v; want Complete, %s, false", st.Phase, st.StableRevision, r.Staged(), candRev)
	}
}

func TestComplete(t *testing.T) {
	r := Complete(PolicyOf(&v1alpha1.HookRolloutPolicy{MaxDeletesPerSync: new(int32)}), candRev, stableHook)
	ps := parentsOf(3)
	st, moved := advance(t, r, t0, ps)
	if moved || st.Phase != v1alpha1.RolloutComplete || st.StableRevision != candRev || st.UpdatedParents != 3 {
		t.Errorf("moved %v, status %+v; want a complete one", moved, st)
	}
	if r.Staged() || r.MaxDeletes() != -1 || len(candidates(r, ps)) != 3 || string(st.Stable.Raw) != string(stableHook) {
		t.Errorf("Staged %v, MaxDeletes %d, %d candidates, stable %s", r.Staged(), r.MaxDeletes(), len(candidates(r, ps)), st.Stable.Raw)
	}
}

func TestInvalidPolicy(t *testing.T) {
	ps := parentsOf(4)
	r := Start(policy(intstr.FromString("lots"), intstr.FromInt32(1), 0), stableRev, stableHook, candRev, nil)
	if _, moved, err := r.Advance(t0, ps); err == nil || moved {
		t.Errorf("canary \"lots\": moved %v, err %v; want an error", moved, err)
	}
	r = Start(policy(intstr.FromInt32(1), intstr.FromString("many"), 0), stableRev, stableHook, candRev, nil)
	advance(t, r, t0, ps)
	syncAll(r, ps)
	if _, moved, err := r.Advance(t0, ps); err == nil || moved {
		t.Errorf("step \"many\": moved %v, err %v; want an error", moved, err)
	}
}

// TestRankKept pins Rank: the cluster keeps a rollout's cutoff (status.hookRollout.cutoff),
// so an engine whose Rank changed would resume a rollout with other parents on the candidate.
func TestRankKept(t *testing.T) {
	tests := []struct {
		uid  types.UID
		want uint64
	}{
		{uid: "uid-00", want: 0x5554e64b7795d42e},
		{uid: "uid-07", want: 0x5554e94b7795d947},
	}
	for _, tc := range tests {
		if got := Rank(tc.uid, candRev); got != tc.want {
			t.Errorf("Rank(%s, %s) = %#x, want %#x", tc.uid, candRev, got, tc.want)
		}
	}
	if Rank("uid-00", candRev) == Rank("uid-00", stableRev) {
		t.Error("Rank does not depend on the revision")
	}
}

// TestConcurrentUse drives a rollout to completion while reconciles query and report; run
// it with -race.
func TestConcurrentUse(t *testing.T) {
	ps := parentsOf(8)
	r := Start(policy(intstr.FromInt32(2), intstr.FromString("50%"), 0), stableRev, stableHook, candRev, nil)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, p := range ps {
				if r.Candidate(p.UID) {
					r.Synced(p, nil)
				} else if r.DryRun() {
					r.Rendered(p, Planned{}, nil)
				}
			}
			_, _ = r.Status(), r.MaxDeletes()
		}
	}()
	// A reader that takes no other lock between its reads.
	readerStopped := make(chan struct{})
	go func() {
		defer close(readerStopped)
		for {
			select {
			case <-done:
				return
			default:
			}
			_, _ = r.Revision(), r.Status().StableRevision
		}
	}()
	var st v1alpha1.HookRolloutStatus
	for i := 0; i < 10000 && st.Phase != v1alpha1.RolloutComplete; i++ {
		st, _ = advance(t, r, t0.Add(time.Duration(i)*time.Second), ps)
		time.Sleep(time.Millisecond)
	}
	close(done)
	<-stopped
	<-readerStopped
	if stable := r.Status().StableRevision; st.Phase != v1alpha1.RolloutComplete || stable != candRev {
		t.Errorf("phase %s, stable revision %s; want Complete, %s", st.Phase, stable, candRev)
	}
}
