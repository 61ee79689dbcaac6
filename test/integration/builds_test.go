package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/test/enginetest"
)

// builds is how many times the manager built controller ctl (namespacedcompositecontroller/NS/NAME).
func builds(ctl string) float64 {
	return testutil.ToFloat64(env.Engine.Metrics.ControllerBuilds.WithLabelValues(ctl))
}

// TestBuildsServedInTurnByTenant: with team-a's many controllers queued, each build of which
// burns its whole compile budget, team-b's new controller is built at once, on the worker
// team-a leaves free, not after them: between its creation and the end of its build, at most
// the two team-a builds in process end.
func TestBuildsServedInTurnByTenant(t *testing.T) {
	const slow = 10
	teamA, teamB := env.Namespace(t), env.Namespace(t)
	tenantAccount(t, teamB, "tenant", teamB)
	waitIdle(t, "controllers")
	adds, _, _ := queueCounts(t, "controllers")
	var burners []string
	for i := range slow {
		name := fmt.Sprintf("burn-%d", i)
		namespacedController(t, teamA, "builds-burn.yaml", "NAME", name)
		burners = append(burners, "namespacedcompositecontroller/"+teamA+"/"+name)
	}
	built := func() (n float64) {
		for _, b := range burners {
			n += builds(b)
		}
		return n
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		now, _, _ := queueCounts(t, "controllers")
		return now-adds >= slow, fmt.Sprintf("%v of team-a's %d controllers queued", now-adds, slow)
	})
	before := built()
	_, _, ahead := queueCounts(t, "controllers")
	namespacedController(t, teamB, "namespaced.yaml", "NAME", "prompt", "SUITE", "prompt", "ACCOUNT", "tenant")
	prompt := "namespacedcompositecontroller/" + teamB + "/prompt"
	for deadline := time.Now().Add(wait); builds(prompt) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("team-b's controller not built after %s", wait)
		}
	}
	if n := built() - before; n > 2 {
		t.Errorf("%v of team-a's slow builds (%v queued) ended between the creation and the build of team-b's new controller; "+
			"want at most the 2 in process", n, ahead)
	}
	t.Logf("team-a: %v of %d builds done and %v keys queued when team-b's controller came; %v more before it was built",
		before, slow, ahead, built()-before)
	waitControllerReadyIn(t, "NamespacedCompositeController", teamB, "prompt")
	enginetest.Eventually(t, wait, func() (bool, string) {
		n := built()
		return n == slow, fmt.Sprintf("%v of team-a's %d builds", n, slow)
	})
	for _, b := range burners {
		cur := env.Get(t, "metascript.dev/v1alpha1", "NamespacedCompositeController", teamA, b[len("namespacedcompositecontroller/"+teamA+"/"):])
		if r := conditionReason(cur, "HooksCompiled"); r != "CompileError" {
			t.Errorf("%s: HooksCompiled %s, want CompileError: its top level must burn its budget", b, r)
		}
	}
	// team-b's controller runs.
	bundle(t, teamB, "p", "prompt", "p", "x=1")
	enginetest.Eventually(t, wait, func() (bool, string) {
		v := value(configMap(t, teamB, "p-x"))
		return v == "1", "team-b's child: " + v
	})
}

// TestLibraryEditRebuildsOnlyWhatChanged: a status write and a label edit of a library leave
// its revision as it was: they build none of its users, nor queue them. An edit of a module
// builds each user once.
func TestLibraryEditRebuildsOnlyWhatChanged(t *testing.T) {
	const users, library = 6, "rebuild-text"
	lib := hookLibrary(t, library, "v1:")
	var refs []string
	for i := range users {
		name := fmt.Sprintf("rebuild-%d", i)
		controller(t, "library-bundle.yaml", "NAME", name, "SUITE", name, "LIBRARY", library)
		refs = append(refs, "compositecontroller/"+name)
	}
	for i := range users {
		waitControllerReady(t, "CompositeController", fmt.Sprintf("rebuild-%d", i))
	}
	revision := func() string {
		cur := env.Get(t, "metascript.dev/v1alpha1", "HookLibrary", "", library)
		rev, _, _ := unstructured.NestedString(cur.Object, "status", "revision")
		return rev
	}
	enginetest.Eventually(t, wait, func() (bool, string) { return revision() != "", "no revision in the library's status" })
	first := revision()
	waitIdle(t, "controllers")
	before := map[string]float64{}
	for _, r := range refs {
		before[r] = builds(r)
	}
	adds, _, _ := queueCounts(t, "controllers")

	// A status write of someone else's: the engine writes its own back.
	status := env.Client(t, lib)
	if _, err := status.Patch(t.Context(), library, types.MergePatchType,
		[]byte(`{"status":{"revision":"tampered"}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	enginetest.Eventually(t, wait, func() (bool, string) {
		rev := revision()
		return rev == first, "the library's status revision is " + rev + ", want the engine's " + first
	})
	env.Patch(t, lib, `{"metadata":{"labels":{"team":"a"}}}`)
	waitIdle(t, "controllers")
	after, _, _ := queueCounts(t, "controllers")
	for _, r := range refs {
		if n := builds(r); n != before[r] {
			t.Errorf("%s built %v times by a status write and a label edit of its library", r, n-before[r])
		}
	}
	if queued := after - adds; queued >= users {
		t.Errorf("%v keys queued for a status write and a label edit of a library with %d users; want only the library's own", queued, users)
	}

	editLibraryModule(t, library, "prefix", `PREFIX = "v2:"`)
	enginetest.Eventually(t, wait, func() (bool, string) {
		for _, r := range refs {
			if builds(r) < before[r]+1 {
				return false, r + " not built again after a module edit"
			}
		}
		return true, ""
	})
	waitIdle(t, "controllers")
	for _, r := range refs {
		if n := builds(r) - before[r]; n != 1 {
			t.Errorf("%s built %v times for one module edit, want once", r, n)
		}
	}
}
