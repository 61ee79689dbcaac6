package catset

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/examples/internal/exampletest"
	"metascript.dev/metascript/test/enginetest"
)

// The e2e tests run the engine in-process against a real kube-apiserver and etcd, install
// the CatSet and Cat CRDs, then the controller in each language, and drive the sample through
// ordered creation, a rolling update with a pause and a scale-down in the middle of it, a
// scale-up, and an ordered teardown. There are no nodes, no kubelet and no
// kube-controller-manager: the test plays the kubelet (it sets each Cat's Ready condition and
// holds a deleted Cat with a finalizer, as a Pod's grace period would) and lifts the
// pvc-protection finalizer of deleted claims.

var env *enginetest.Env

func TestMain(m *testing.M) {
	enginetest.Main(m, enginetest.Options{CRDDirs: []string{"crd.yaml"}}, &env)
}

const (
	runner    = "compositecontroller/catset"
	finalizer = "metascript.dev/compositecontroller-catset"
	// hold is the test's finalizer on Cats: a deleted Cat stays, terminating, until the test
	// lifts it, as a Pod does until its containers have stopped.
	hold = "examples.metascript.dev/kubelet"
	wait = exampletest.Wait
)

var revisions = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "controllerrevisions"}

func TestCatSet(t *testing.T) {
	for _, l := range exampletest.Languages {
		t.Run(l.Name, func(t *testing.T) {
			exampletest.RequireSupport(t, env.Engine.Runtime, l.Lang, stdlibModules...)
			start := time.Now()
			install(t, l.File)
			s := &scenario{t: t, ns: env.Namespace(t)}
			objs := enginetest.ObjectsFromFile(t, "sample.yaml")
			env.Create(t, s.ns, objs[1]) // the headless Service
			cs := env.Create(t, s.ns, objs[0])

			// Ordered creation: web-n appears only once web-(n-1) is Ready. Each RolledOut
			// message below was written by a reconcile that saw web-n and asked for no more
			// Cats (n+1 of n+1 children), so web-(n+1) cannot appear until the test says
			// web-n is Ready.
			for n := range 3 {
				name := cat(n)
				s.waitRolledOut("False", "Waiting", fmt.Sprintf("%d of %d children updated; Cat %s is not ready: it has no condition Ready", n+1, n+1, name))
				if next := s.cats()[cat(n+1)]; next.exists() {
					t.Fatalf("%s exists while %s is not Ready", cat(n+1), name)
				}
				s.checkStatus(int64(n+1), int64(n))
				s.setReady(name, "True", "")
			}
			rolledOut := s.waitRolledOut("True", "RolledOut", "every child is on revision ")
			first := strings.TrimPrefix(rolledOut, "every child is on revision ")
			s.checkRevisions(first)
			s.checkStatus(3, 3)
			cs = s.catSet()
			if !slices.Contains(cs.GetFinalizers(), finalizer) {
				t.Errorf("CatSet finalizers %v, want %s", cs.GetFinalizers(), finalizer)
			}
			before := s.cats()
			for n := range 3 {
				s.checkCat(cs, n, "nginx:1.27")
				s.checkClaim(cs, n)
			}
			claims := s.claimUIDs()

			// A new template rolls out highest ordinal first, one Cat at a time: web-2 is
			// recreated with the new image, and the others wait for it to be Ready.
			cs = env.Patch(t, cs, `{"spec":{"template":{"spec":{"image":"nginx:1.28"}}}}`)
			now := s.waitCats("web-2 recreated", func(c map[string]catState) bool {
				return c["web-2"].updated(before["web-2"], "nginx:1.28") && c["web-1"] == before["web-1"] && c["web-0"] == before["web-0"]
			})
			paused := s.waitRolledOut("False", "Paused", "1 of 3 children updated; Cat web-2 holds the rollout: it has no condition Ready")
			second := revisionOf(t, paused)
			if second == first {
				t.Fatalf("the new template kept revision %s", first)
			}
			s.checkRevisions(first, second)

			// A Cat that is not Ready holds the rollout, however long: web-2 reports Ready
			// False, and after a reconcile, triggered by a label on the CatSet (outside
			// spec.template: it rolls nothing and makes no revision), web-1 and web-0 are
			// still as they were.
			s.setReady("web-2", "False", "CrashLoopBackOff")
			s.waitRolledOut("False", "Paused", "1 of 3 children updated; Cat web-2 holds the rollout: condition Ready is False (want True)")
			settle(t, func() { env.Patch(t, cs, `{"metadata":{"labels":{"tier":"frontend"}}}`) })
			if c := s.cats(); c["web-2"] != now["web-2"] || c["web-1"] != before["web-1"] || c["web-0"] != before["web-0"] {
				t.Fatalf("the rollout went on past a Cat that is not Ready: %v, before %v", c, now)
			}
			s.checkRevisions(first, second)

			// Scaling is not rolled: down to 2 in the middle of the rollout, web-2 goes at once
			// though it is on the new revision (web-0 and web-1 are Ready), its claim stays,
			// and the rollout, now over two Cats, moves on to web-1.
			cs = env.Patch(t, cs, `{"spec":{"replicas":2}}`)
			now = s.waitCats("web-2 removed, web-1 recreated", func(c map[string]catState) bool {
				return !c["web-2"].exists() && c["web-1"].updated(before["web-1"], "nginx:1.28") && c["web-0"] == before["web-0"]
			})
			s.waitRolledOut("False", "Paused", "revision "+second+": 1 of 2 children updated; Cat web-1 holds the rollout: it has no condition Ready")
			s.checkRevisions(first, second)
			if got := s.claimUIDs(); got["www-web-2"] != claims["www-web-2"] {
				t.Errorf("claim www-web-2 was not kept on scale-down: %v, before %v", got, claims)
			}

			s.setReady("web-1", "True", "")
			s.waitCats("web-0 recreated", func(c map[string]catState) bool {
				return c["web-1"].uid == now["web-1"].uid && c["web-0"].updated(before["web-0"], "nginx:1.28")
			})
			s.waitRolledOut("False", "Waiting", "revision "+second+": 2 of 2 children updated; Cat web-0 is not ready: it has no condition Ready")
			s.setReady("web-0", "True", "")
			s.waitRolledOut("True", "RolledOut", "every child is on revision "+second)
			// Pruned: the old revision has no Cat left.
			s.checkRevisions(second)

			// Scaling up makes no revision either: web-2 comes back with the current template
			// and its old claim.
			cs = env.Patch(t, cs, `{"spec":{"replicas":3}}`)
			s.waitRolledOut("False", "Waiting", "revision "+second+": 3 of 3 children updated; Cat web-2 is not ready: it has no condition Ready")
			s.checkRevisions(second)
			s.checkCat(cs, 2, "nginx:1.28")
			if got := s.claimUIDs(); got["www-web-2"] != claims["www-web-2"] {
				t.Errorf("web-2 came back with another claim: %v, before %v", got, claims)
			}
			s.setReady("web-2", "True", "")
			s.waitRolledOut("True", "RolledOut", "every child is on revision "+second)
			s.checkStatus(3, 3)
			t.Logf("created, rolled out and scaled in %s", time.Since(start).Round(time.Millisecond))

			// Ordered teardown: the finalize hook scales to zero, highest ordinal first, each
			// Cat once the one above it is gone, then deletes the claims. The test holds each
			// deleted Cat (as a Pod's grace period would) to see that the next waits.
			for n := range 3 {
				s.patchCat(cat(n), fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, hold))
			}
			env.Delete(t, cs)
			for n := 2; n >= 0; n-- {
				name := cat(n)
				s.waitCats(name+" terminating", func(c map[string]catState) bool { return c[name].terminating })
				settle(t, func() { env.Patch(t, cs, fmt.Sprintf(`{"metadata":{"labels":{"teardown":"%d"}}}`, n)) })
				c := s.cats()
				for m := range n {
					if !c[cat(m)].exists() || c[cat(m)].terminating {
						t.Fatalf("%s is being deleted while %s still is: %v", cat(m), name, c)
					}
				}
				for claim, terminating := range s.claimsTerminating() {
					if terminating {
						t.Fatalf("claim %s is being deleted while %s still exists", claim, name)
					}
				}
				s.checkStatus(int64(n), int64(n))
				s.patchCat(name, `{"metadata":{"finalizers":null}}`)
				s.waitCats(name+" gone", func(c map[string]catState) bool { return !c[name].exists() })
			}
			// No kube-controller-manager lifts the claims' pvc-protection finalizer: the test does.
			enginetest.Eventually(t, wait, func() (bool, string) {
				left := s.claimsTerminating()
				for claim, terminating := range left {
					if terminating {
						obj := env.Get(t, "v1", "PersistentVolumeClaim", s.ns, claim)
						if obj != nil && len(obj.GetFinalizers()) > 0 {
							env.Patch(t, obj, `{"metadata":{"finalizers":null}}`)
						}
					}
				}
				gone := env.Get(t, exampleAPI, "CatSet", s.ns, "web") == nil
				return len(left) == 0 && gone, fmt.Sprintf("claims left %v, CatSet gone: %v", left, gone)
			})
			if w := exampletest.Warnings(t, env, s.ns, "CatSet", "web"); len(w) > 0 {
				t.Errorf("Warning events on the CatSet: %v", w)
			}
			t.Logf("ran in %s", time.Since(start).Round(time.Millisecond))
		})
	}
}

// install creates the controller of file and waits until it runs. On cleanup it deletes it
// and waits until no runner is left, so that the next language may install one of the same
// name.
func install(t *testing.T, file string) {
	t.Helper()
	cc := env.Create(t, "", enginetest.ObjectsFromFile(t, file)[0])
	t.Cleanup(func() {
		env.Delete(t, cc)
		enginetest.Eventually(t, wait, func() (bool, string) {
			n := testutil.ToFloat64(env.Engine.Metrics.Controllers.WithLabelValues("running"))
			return env.Get(t, cc.GetAPIVersion(), cc.GetKind(), "", cc.GetName()) == nil && n == 0,
				fmt.Sprintf("controller still present or %v runners running", n)
		})
	})
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := env.Get(t, cc.GetAPIVersion(), cc.GetKind(), "", cc.GetName())
		g, _, _ := unstructured.NestedInt64(cur.Object, "status", "observedGeneration")
		return g == cur.GetGeneration() && enginetest.Condition(cur, "HooksCompiled") == "True" &&
				enginetest.Condition(cur, "Ready") == "True",
			fmt.Sprintf("controller status = %v", cur.Object["status"])
	})
}

// settle runs touch, which must make the controller reconcile the CatSet, and waits until a
// reconcile has succeeded since and the work queue is empty.
func settle(t *testing.T, touch func()) {
	t.Helper()
	success := env.Engine.Metrics.Reconciles.WithLabelValues(runner, "success")
	before := testutil.ToFloat64(success)
	touch()
	enginetest.Eventually(t, wait, func() (bool, string) {
		n := testutil.ToFloat64(success)
		depth := env.Engine.Metrics.QueueDepth(runner)
		return n > before && depth == 0, fmt.Sprintf("reconciles %v → %v, queue depth %v", before, n, depth)
	})
}

func cat(n int) string { return fmt.Sprintf("web-%d", n) }

// scenario is one language's run, in its own namespace, on the sample CatSet web.
type scenario struct {
	t  *testing.T
	ns string
}

// catState is what the test follows of a Cat: which object it is and what it runs.
type catState struct {
	uid         types.UID
	image       string
	terminating bool
}

func (c catState) exists() bool { return c.uid != "" }

// updated reports whether c is a new Cat, not old, running image.
func (c catState) updated(old catState, image string) bool {
	return c.exists() && !c.terminating && c.uid != old.uid && c.image == image
}

func (s *scenario) catSet() *unstructured.Unstructured {
	return env.Get(s.t, exampleAPI, "CatSet", s.ns, "web")
}

// cats reads web-0 to web-3; a missing Cat has the zero state.
func (s *scenario) cats() map[string]catState {
	out := map[string]catState{}
	for n := range 4 {
		obj := env.Get(s.t, exampleAPI, "Cat", s.ns, cat(n))
		if obj == nil {
			continue
		}
		image, _, _ := unstructured.NestedString(obj.Object, "spec", "image")
		out[cat(n)] = catState{uid: obj.GetUID(), image: image, terminating: obj.GetDeletionTimestamp() != nil}
	}
	return out
}

func (s *scenario) waitCats(what string, cond func(map[string]catState) bool) map[string]catState {
	s.t.Helper()
	var c map[string]catState
	enginetest.Eventually(s.t, wait, func() (bool, string) {
		c = s.cats()
		return cond(c), fmt.Sprintf("%s: Cats %v", what, c)
	})
	return c
}

// setReady plays the kubelet: it sets Cat name's Ready condition.
func (s *scenario) setReady(name, status, reason string) {
	s.t.Helper()
	cond := map[string]any{"type": "Ready", "status": status}
	if reason != "" {
		cond["reason"] = reason
	}
	obj := env.Get(s.t, exampleAPI, "Cat", s.ns, name)
	if obj == nil {
		s.t.Fatalf("no Cat %s to set Ready on", name)
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []any{cond}}})
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := env.Client(s.t, obj).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		s.t.Fatalf("setting Ready=%s on %s: %v", status, name, err)
	}
}

func (s *scenario) patchCat(name, patch string) {
	s.t.Helper()
	obj := env.Get(s.t, exampleAPI, "Cat", s.ns, name)
	if obj == nil {
		s.t.Fatalf("no Cat %s", name)
	}
	env.Patch(s.t, obj, patch)
}

// waitRolledOut waits until the CatSet's RolledOut condition has status and reason and a
// message containing text, and returns the message.
func (s *scenario) waitRolledOut(status, reason, text string) string {
	s.t.Helper()
	var msg string
	enginetest.Eventually(s.t, wait, func() (bool, string) {
		cond := condition(s.catSet(), "RolledOut")
		msg, _ = cond["message"].(string)
		return cond["status"] == status && cond["reason"] == reason && strings.Contains(msg, text),
			fmt.Sprintf("RolledOut %v, want %s %s %q", cond, status, reason, text)
	})
	return msg
}

// checkStatus checks the CatSet's replicas and readyReplicas.
func (s *scenario) checkStatus(replicas, ready int64) {
	s.t.Helper()
	cs := s.catSet()
	r, _, _ := unstructured.NestedInt64(cs.Object, "status", "replicas")
	rr, _, _ := unstructured.NestedInt64(cs.Object, "status", "readyReplicas")
	if r != replicas || rr != ready {
		s.t.Errorf("CatSet status %v, want replicas %d, readyReplicas %d", cs.Object["status"], replicas, ready)
	}
}

// checkRevisions checks the names of the CatSet's ControllerRevisions.
func (s *scenario) checkRevisions(want ...string) {
	s.t.Helper()
	list, err := env.Dynamic.Resource(revisions).Namespace(s.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	var got []string
	for _, r := range list.Items {
		got = append(got, r.GetName())
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		s.t.Errorf("ControllerRevisions %v, want %v", got, want)
	}
}

// checkCat checks Cat n: owned by the CatSet, labelled from the template, named in DNS
// through the Service, mounting its claim.
func (s *scenario) checkCat(cs *unstructured.Unstructured, n int, image string) {
	s.t.Helper()
	obj := env.Get(s.t, exampleAPI, "Cat", s.ns, cat(n))
	if obj == nil {
		s.t.Fatalf("no Cat %s", cat(n))
	}
	checkOwner(s.t, obj, cs)
	want := fmt.Sprintf(`map[hostname:%s image:%s subdomain:web volumes:[map[name:www persistentVolumeClaim:map[claimName:www-%s]]]]`,
		cat(n), image, cat(n))
	if got := fmt.Sprint(obj.Object["spec"]); got != want {
		s.t.Errorf("Cat %s spec %s, want %s", cat(n), got, want)
	}
	if got := obj.GetLabels(); got["app"] != "web" {
		s.t.Errorf("Cat %s labels %v, want app=web", cat(n), got)
	}
}

// checkClaim checks claim www-web-n: owned by the CatSet, labelled with its selector, the
// template's spec.
func (s *scenario) checkClaim(cs *unstructured.Unstructured, n int) {
	s.t.Helper()
	obj := env.Get(s.t, "v1", "PersistentVolumeClaim", s.ns, "www-"+cat(n))
	if obj == nil {
		s.t.Fatalf("no claim www-%s", cat(n))
	}
	checkOwner(s.t, obj, cs)
	storage, _, _ := unstructured.NestedString(obj.Object, "spec", "resources", "requests", "storage")
	if obj.GetLabels()["app"] != "web" || storage != "1Gi" {
		s.t.Errorf("claim www-%s labels %v, storage %q; want app=web, 1Gi", cat(n), obj.GetLabels(), storage)
	}
}

// claimUIDs maps the claims that exist to their UIDs.
func (s *scenario) claimUIDs() map[string]types.UID {
	out := map[string]types.UID{}
	for n := range 4 {
		if obj := env.Get(s.t, "v1", "PersistentVolumeClaim", s.ns, "www-"+cat(n)); obj != nil {
			out[obj.GetName()] = obj.GetUID()
		}
	}
	return out
}

// claimsTerminating maps the claims that exist to whether they are being deleted.
func (s *scenario) claimsTerminating() map[string]bool {
	out := map[string]bool{}
	for n := range 4 {
		if obj := env.Get(s.t, "v1", "PersistentVolumeClaim", s.ns, "www-"+cat(n)); obj != nil {
			out[obj.GetName()] = obj.GetDeletionTimestamp() != nil
		}
	}
	return out
}

func checkOwner(t *testing.T, obj, cs *unstructured.Unstructured) {
	t.Helper()
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.UID != cs.GetUID() || ref.Kind != "CatSet" {
		t.Errorf("%s %s controller reference %+v, want the CatSet web (%s)", obj.GetKind(), obj.GetName(), ref, cs.GetUID())
	}
}

func condition(obj *unstructured.Unstructured, typ string) map[string]any {
	if obj == nil {
		return nil
	}
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// revisionOf is the revision a RolledOut message names: "revision NAME: ...".
func revisionOf(t *testing.T, msg string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(msg, "revision ")
	name, _, found := strings.Cut(rest, ":")
	if !ok || !found {
		t.Fatalf("RolledOut message %q names no revision", msg)
	}
	return name
}
