package configmappropagation

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/examples/internal/exampletest"
	"metascript.dev/metascript/test/enginetest"
)

// The e2e tests run the engine in-process against a real kube-apiserver and etcd, install
// the example's CRD, then its controller in each language, and drive propagations through
// namespaces selected by label and by name, namespaces created, labelled, unlabelled and
// deleted later, someone else's ConfigMap in the way, a source edited and deleted, a second
// propagation beside the first, and deletion. No kube-controller-manager runs: a deleted
// namespace stays Terminating with its content, and only the finalize hook removes copies
// when a propagation is deleted.

var env *enginetest.Env

func TestMain(m *testing.M) {
	enginetest.Main(m, enginetest.Options{CRDDirs: []string{"crd.yaml", "testdata/metacontroller/crd.yaml"}}, &env)
}

const (
	propAPI    = "examples.metascript.dev/v1alpha1"
	controller = "compositecontroller/configmap-propagation"
	finalizer  = "metascript.dev/compositecontroller-configmap-propagation"
	sourceNote = "configmappropagation.examples.metascript.dev/source"
	wait       = exampletest.Wait
)

func TestConfigMapPropagation(t *testing.T) {
	for _, l := range exampletest.Languages {
		t.Run(l.Name, func(t *testing.T) {
			exampletest.RequireSupport(t, env.Engine.Runtime, l.Lang, "k8s")
			// InstallController only reads the file's first object and its status: it installs
			// a CompositeController as well, and removes it on cleanup.
			exampletest.InstallController(t, env, l.File)

			// A label unique to this run, so that nothing of another run is selected. src holds
			// the sources: labelled, yet never a target. named is listed by name, and later
			// too, before it exists. In taken, someone else's ConfigMap has the copies' name.
			team := fmt.Sprintf("%s-%d", l.Name, time.Now().UnixNano()%100000)
			src, a, b, taken := env.Namespace(t), env.Namespace(t), env.Namespace(t), env.Namespace(t)
			named, other, later := env.Namespace(t), env.Namespace(t), "later-"+team
			for _, ns := range []string{src, a, b, taken} {
				labelNamespace(t, ns, "team", team)
			}
			theirs := env.Create(t, taken, enginetest.Object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: theirs}`))
			source := env.Create(t, src, enginetest.Object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: hello}`))
			prop := createPropagation(t, "settings-"+l.Name, map[string]any{
				"sourceNamespace":   src,
				"sourceName":        "settings",
				"targetNamespaces":  []any{named, later},
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{"team": team}},
			})

			// Copied into the labelled namespaces and the named one that exists; not into the
			// source's own namespace, though it is labelled, nor into the unselected one. Each
			// copy is controlled by the propagation and names its source. The ConfigMap in
			// taken is reported as a conflict: expected, and left alone.
			hello := map[string]string{"greeting": "hello"}
			copies := waitCopies(t, prop, "settings", hello, a, b, named)
			for ns, c := range copies {
				if c.GetAnnotations()[sourceNote] != src+"/settings" {
					t.Errorf("copy in %s annotations = %v, want %s: %s/settings", ns, c.GetAnnotations(), sourceNote, src)
				}
			}
			waitStatus(t, prop, true, []string{taken}, a, b, named)
			if cur := env.Get(t, "v1", "ConfigMap", src, "settings"); cur.GetResourceVersion() != source.GetResourceVersion() || len(cur.GetOwnerReferences()) > 0 {
				t.Errorf("the source was written: %v", cur.Object["metadata"])
			}
			if c := env.Get(t, "v1", "ConfigMap", other, "settings"); c != nil {
				t.Errorf("a copy in the unselected namespace %s", other)
			}
			if p := getPropagation(t, prop.GetName()); !slices.Contains(p.GetFinalizers(), finalizer) {
				t.Errorf("finalizers = %v, want %s", p.GetFinalizers(), finalizer)
			}

			// Steady state: a resync of the converged propagation writes nothing.
			var before map[string]string
			settle(t, func() {
				env.Patch(t, prop, fmt.Sprintf(`{"metadata":{"labels":{"resync":"%d"}}}`, time.Now().UnixNano()))
				before = versions(t, prop, "settings", a, b, named)
			})
			if after := versions(t, prop, "settings", a, b, named); !reflect.DeepEqual(after, before) {
				t.Errorf("a resync of a converged propagation wrote:\nbefore %v\nafter  %v", before, after)
			}

			// A namespace created later under a listed name, and one labelled later, get
			// their copies.
			if _, err := env.Kube.CoreV1().Namespaces().Create(context.Background(),
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: later}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			labelNamespace(t, other, "team", team)
			copies = waitCopies(t, prop, "settings", hello, a, b, named, later, other)
			waitStatus(t, prop, true, []string{taken}, a, b, named, later, other)

			// The source changes: every copy follows, in place.
			env.Patch(t, source, `{"data":{"greeting":"hi","added":"yes"}}`)
			hi := map[string]string{"greeting": "hi", "added": "yes"}
			for ns, c := range waitCopies(t, prop, "settings", hi, a, b, named, later, other) {
				if c.GetUID() != copies[ns].GetUID() {
					t.Errorf("the copy in %s was replaced, not updated in place", ns)
				}
			}

			// Namespaces stop being selected: b loses its label, named leaves the list, a is
			// deleted (and stays Terminating here). Each loses its copy; the others stay as
			// they are.
			kept := versions(t, prop, "settings", later, other)
			delete(kept, "ConfigMapPropagation/"+prop.GetName())
			labelNamespace(t, b, "team", nil)
			prop = patchSpec(t, prop, map[string]any{"targetNamespaces": []any{later}})
			if err := env.Kube.CoreV1().Namespaces().Delete(context.Background(), a, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitNoCopy(t, "settings", a, b, named)
			waitStatus(t, prop, true, []string{taken}, later, other)
			after := versions(t, prop, "settings", later, other)
			delete(after, "ConfigMapPropagation/"+prop.GetName())
			if !reflect.DeepEqual(after, kept) {
				t.Errorf("copies that stayed selected were written:\nbefore %v\nafter  %v", kept, after)
			}

			// A second propagation, of another source in the same namespace, into other (where
			// the first has a copy too) and c. Its source changing, c leaving it and its
			// deletion touch nothing of the first's.
			c := env.Namespace(t)
			for _, ns := range []string{other, c} {
				labelNamespace(t, ns, "extra", team)
			}
			features := env.Create(t, src, enginetest.Object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: features}
data: {search: "on"}`))
			second := createPropagation(t, "features-"+l.Name, map[string]any{
				"sourceNamespace":   src,
				"sourceName":        "features",
				"namespaceSelector": map[string]any{"matchLabels": map[string]any{"extra": team}},
			})
			waitCopies(t, second, "features", map[string]string{"search": "on"}, c, other)
			waitStatus(t, second, true, nil, c, other)
			first := versions(t, prop, "settings", later, other)
			env.Patch(t, features, `{"data":{"search":"off"}}`)
			waitCopies(t, second, "features", map[string]string{"search": "off"}, c, other)
			labelNamespace(t, c, "extra", nil)
			waitNoCopy(t, "features", c)
			waitStatus(t, second, true, nil, other)
			env.Delete(t, second)
			waitNoCopy(t, "features", other)
			waitGone(t, second.GetName())
			if now := versions(t, prop, "settings", later, other); !reflect.DeepEqual(now, first) {
				t.Errorf("the second propagation's changes wrote the first or its copies:\nbefore %v\nafter  %v", first, now)
			}

			// Someone else's ConfigMap was never written. Once it is deleted, taken gets a
			// copy like the others.
			if cur := env.Get(t, "v1", "ConfigMap", taken, "settings"); cur.GetResourceVersion() != theirs.GetResourceVersion() {
				t.Errorf("someone else's ConfigMap was written: %v", cur.Object)
			}
			env.Delete(t, theirs)
			waitCopies(t, prop, "settings", hi, taken)
			waitStatus(t, prop, true, nil, later, other, taken)

			// The source deleted: its copies go, as in Metacontroller's example.
			env.Delete(t, source)
			waitNoCopy(t, "settings", later, other, taken)
			waitStatus(t, prop, false, nil)

			// Recreated, then the propagation deleted: finalize removes every copy before the
			// propagation goes.
			env.Create(t, src, enginetest.Object(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {greeting: again}`))
			waitCopies(t, prop, "settings", map[string]string{"greeting": "again"}, later, other, taken)
			env.Delete(t, prop)
			waitNoCopy(t, "settings", later, other, taken)
			waitGone(t, prop.GetName())

			for _, name := range []string{prop.GetName(), second.GetName()} {
				if w := exampletest.Warnings(t, env, metav1.NamespaceDefault, "ConfigMapPropagation", name); len(w) > 0 {
					t.Errorf("Warning events on %s: %v", name, w)
				}
			}
		})
	}
}

// createPropagation creates a ConfigMapPropagation, and on cleanup deletes it and waits
// until its finalize hook has let it go, before the controller is removed.
func createPropagation(t *testing.T, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": propAPI, "kind": "ConfigMapPropagation",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	prop := env.Create(t, "", obj)
	t.Cleanup(func() {
		env.Delete(t, prop)
		waitGone(t, name)
	})
	return prop
}

func getPropagation(t *testing.T, name string) *unstructured.Unstructured {
	return env.Get(t, propAPI, "ConfigMapPropagation", "", name)
}

func patchSpec(t *testing.T, prop *unstructured.Unstructured, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"spec": spec})
	return env.Patch(t, prop, string(patch))
}

// labelNamespace sets the label key of ns to value, or removes it when value is nil.
func labelNamespace(t *testing.T, ns, key string, value any) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: value}}})
	env.Patch(t, env.Get(t, "v1", "Namespace", "", ns), string(patch))
}

// waitCopies waits until the ConfigMap name in each of namespaces is controlled by prop and
// holds data, and returns them by namespace.
func waitCopies(t *testing.T, prop *unstructured.Unstructured, name string, data map[string]string, namespaces ...string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	enginetest.Eventually(t, wait, func() (bool, string) {
		for _, ns := range namespaces {
			c := env.Get(t, "v1", "ConfigMap", ns, name)
			if c == nil {
				return false, fmt.Sprintf("no ConfigMap %s/%s", ns, name)
			}
			got, _, _ := unstructured.NestedStringMap(c.Object, "data")
			if ref := metav1.GetControllerOf(c); ref == nil || ref.UID != prop.GetUID() || !reflect.DeepEqual(got, data) {
				return false, fmt.Sprintf("ConfigMap %s/%s controller %v, data %v; want %s's copy with %v", ns, name, ref, got, prop.GetName(), data)
			}
			out[ns] = c
		}
		return true, ""
	})
	return out
}

func waitNoCopy(t *testing.T, name string, namespaces ...string) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		var left []string
		for _, ns := range namespaces {
			if env.Get(t, "v1", "ConfigMap", ns, name) != nil {
				left = append(left, ns)
			}
		}
		return len(left) == 0, fmt.Sprintf("ConfigMap %s still in %v", name, left)
	})
}

// waitStatus waits until prop's status is current and says: the source found or not, a
// conflict in each of conflicts, and copies existing in exactly namespaces; expected are both
// (none without a source).
func waitStatus(t *testing.T, prop *unstructured.Unstructured, found bool, conflicts []string, namespaces ...string) {
	t.Helper()
	want := map[string]any{"sourceFound": found, "expected_copies": int64(len(namespaces) + len(conflicts)),
		"actual_copies": int64(len(namespaces)), "copies": sortedAny(namespaces), "conflicts": sortedAny(conflicts)}
	enginetest.Eventually(t, wait, func() (bool, string) {
		cur := getPropagation(t, prop.GetName())
		status, _, _ := unstructured.NestedMap(cur.Object, "status")
		g, _ := status["observedGeneration"].(int64)
		delete(status, "observedGeneration")
		return g == cur.GetGeneration() && reflect.DeepEqual(status, want),
			fmt.Sprintf("%s generation %d, status %v; want %v", prop.GetName(), cur.GetGeneration(), cur.Object["status"], want)
	})
}

func waitGone(t *testing.T, name string) {
	t.Helper()
	enginetest.Eventually(t, wait, func() (bool, string) {
		return getPropagation(t, name) == nil, fmt.Sprintf("ConfigMapPropagation %s still exists", name)
	})
}

// versions maps prop and its copies named name in namespaces to their resourceVersions.
func versions(t *testing.T, prop *unstructured.Unstructured, name string, namespaces ...string) map[string]string {
	t.Helper()
	out := map[string]string{"ConfigMapPropagation/" + prop.GetName(): getPropagation(t, prop.GetName()).GetResourceVersion()}
	for _, ns := range namespaces {
		if c := env.Get(t, "v1", "ConfigMap", ns, name); c != nil {
			out[ns+"/"+name] = c.GetResourceVersion()
		}
	}
	return out
}

// settle runs touch, which must make the controller reconcile a propagation, and waits until
// a reconcile has succeeded since and the work queue is empty. (exampletest.Settle watches
// DecoratorControllers only.)
func settle(t *testing.T, touch func()) {
	t.Helper()
	before := counter(t, env.Engine.Metrics.Reconciles.WithLabelValues(controller, "success"))
	touch()
	enginetest.Eventually(t, wait, func() (bool, string) {
		n := counter(t, env.Engine.Metrics.Reconciles.WithLabelValues(controller, "success"))
		depth := env.Engine.Metrics.QueueDepth(controller)
		return n > before && depth == 0, fmt.Sprintf("reconciles %v → %v, queue depth %v", before, n, depth)
	})
}

func sortedAny(list []string) []any {
	s := slices.Sorted(slices.Values(list))
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

type writer interface{ Write(*dto.Metric) error }

func counter(t *testing.T, c any) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.(writer).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
