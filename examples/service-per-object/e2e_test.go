package serviceperobject

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"metascript.dev/metascript/examples/internal/exampletest"
	"metascript.dev/metascript/test/enginetest"
)

// The e2e tests run the engine in-process against a real kube-apiserver and etcd, install
// the Backend CRD, then the decorator in each language, and drive the sample through
// exposure, edits, a deleted Service, a bad annotation, opting out and back in, and
// deletion. No kube-controller-manager runs: only the finalize hook removes Services.

var env *enginetest.Env

func TestMain(m *testing.M) {
	enginetest.Main(m, enginetest.Options{CRDDirs: []string{"crd.yaml"}}, &env)
}

const (
	backendAPI     = "examples.metascript.dev/v1alpha1"
	decorator      = "service-per-object"
	portAnnotation = "service-per-object.metascript.dev/port"
	serviceLabel   = "service-per-object.metascript.dev/service"
	finalizer      = "metascript.dev/decoratorcontroller-service-per-object"
	wait           = exampletest.Wait
)

func TestServicePerObject(t *testing.T) {
	for _, l := range exampletest.Languages {
		t.Run(l.Name, func(t *testing.T) {
			exampletest.RequireSupport(t, env.Engine.Runtime, l.Lang, "json", "re", "strings")
			exampletest.InstallController(t, env, l.File)
			ns := env.Namespace(t)
			web := env.Create(t, ns, enginetest.ObjectsFromFile(t, "sample.yaml")[0])
			plain := env.Create(t, ns, enginetest.Object(t, `
apiVersion: examples.metascript.dev/v1alpha1
kind: Backend
metadata: {name: plain}
spec: {selector: {app: plain}}`))

			// Exposed: a Service owned by the Backend, selecting its Pods on the annotated port;
			// the Backend is labelled with its name, and its status has the cluster IP.
			svc := waitService(t, ns, 8080)
			if !exampletest.ControlledBy(svc, web, decorator) {
				t.Errorf("Service owners %+v, annotations %v: want controlled by the Backend and marked",
					svc.GetOwnerReferences(), svc.GetAnnotations())
			}
			if sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector"); !reflect.DeepEqual(sel, map[string]string{"app": "web"}) {
				t.Errorf("Service selector = %v, want the Backend's spec.selector", sel)
			}
			ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP")
			waitBackend(t, ns, "labelled, status and finalizer set", func(b *unstructured.Unstructured) bool {
				return b.GetLabels()[serviceLabel] == "web" && status(b, "service") == "web" &&
					status(b, "clusterIP") == ip && slices.Contains(b.GetFinalizers(), finalizer)
			})

			// Steady state: a resync of the converged Backend writes nothing, and the Backend
			// without the annotation was never written.
			var before map[string]string
			exampletest.Settle(t, env, decorator, func() {
				env.Patch(t, web, `{"metadata":{"labels":{"resync":"now"}}}`)
				before = versions(t, ns)
			})
			if after := versions(t, ns); !reflect.DeepEqual(after, before) {
				t.Errorf("a resync of a converged Backend wrote:\nbefore %v\nafter  %v", before, after)
			}
			if cur := get(t, ns, "plain"); cur.GetResourceVersion() != plain.GetResourceVersion() ||
				env.Get(t, "v1", "Service", ns, "plain") != nil {
				t.Errorf("a Backend without the annotation was decorated: %v", cur.Object["metadata"])
			}

			// A new port is applied in place; a deleted Service comes back.
			env.Patch(t, web, fmt.Sprintf(`{"metadata":{"annotations":{%q:"9090"}}}`, portAnnotation))
			if again := waitService(t, ns, 9090); again.GetUID() != svc.GetUID() {
				t.Errorf("the Service was replaced, not updated in place")
			}
			env.Delete(t, svc)
			var recreated *unstructured.Unstructured
			enginetest.Eventually(t, wait, func() (bool, string) {
				recreated = env.Get(t, "v1", "Service", ns, "web")
				return recreated != nil && recreated.GetUID() != svc.GetUID(), "Service web not recreated"
			})

			// A port that is not one fails the hook: a Warning Event says why, nothing changes.
			env.Patch(t, web, fmt.Sprintf(`{"metadata":{"annotations":{%q:"http"}}}`, portAnnotation))
			exampletest.WaitEvent(t, env, ns, "web", "HookFailed", `"http" is not a port number`)
			if cur := env.Get(t, "v1", "Service", ns, "web"); cur == nil || cur.GetResourceVersion() != recreated.GetResourceVersion() {
				t.Errorf("the Service changed after a failed hook: %v", cur)
			}
			if b := get(t, ns, "web"); b.GetLabels()[serviceLabel] != "web" || status(b, "service") != "web" {
				t.Errorf("the Backend's label or status changed after a failed hook: %v, %v", b.GetLabels(), b.Object["status"])
			}

			// Opting out: the Service, the label, the status and the finalizer go.
			env.Patch(t, web, fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, portAnnotation))
			waitBackend(t, ns, "opted out", func(b *unstructured.Unstructured) bool {
				_, labelled := b.GetLabels()[serviceLabel]
				return !labelled && status(b, "service") == "" && status(b, "clusterIP") == "" &&
					len(b.GetFinalizers()) == 0 && env.Get(t, "v1", "Service", ns, "web") == nil
			})

			// Opting in again, then deleting the Backend: finalize removes the Service, and only
			// then does the finalizer let the Backend go.
			env.Patch(t, web, fmt.Sprintf(`{"metadata":{"annotations":{%q:"8080"}}}`, portAnnotation))
			waitService(t, ns, 8080)
			env.Delete(t, web)
			env.Delete(t, plain)
			enginetest.Eventually(t, wait, func() (bool, string) {
				return get(t, ns, "web") == nil && env.Get(t, "v1", "Service", ns, "web") == nil,
					fmt.Sprintf("Backend or Service left: %v", get(t, ns, "web") != nil)
			})
			// The only Warnings are the failed hook's: every write the engine made was accepted.
			for _, w := range exampletest.Warnings(t, env, ns, "Backend", "web") {
				if !strings.HasPrefix(w, "HookFailed: ") {
					t.Errorf("Warning event on the Backend: %s", w)
				}
			}
		})
	}
}

func get(t *testing.T, ns, name string) *unstructured.Unstructured {
	return env.Get(t, backendAPI, "Backend", ns, name)
}

// waitBackend waits until the sample Backend satisfies cond.
func waitBackend(t *testing.T, ns, what string, cond func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	var b *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		b = get(t, ns, "web")
		return b != nil && cond(b), fmt.Sprintf("%s: Backend web is %v", what, b)
	})
	return b
}

// waitService waits until the Service web exposes port.
func waitService(t *testing.T, ns string, port int64) *unstructured.Unstructured {
	t.Helper()
	var svc *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		svc = env.Get(t, "v1", "Service", ns, "web")
		if svc == nil || svc.GetDeletionTimestamp() != nil {
			return false, "no Service web"
		}
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		if len(ports) != 1 {
			return false, fmt.Sprintf("Service ports %v", ports)
		}
		p := ports[0].(map[string]any)
		return p["port"] == port && p["targetPort"] == port, fmt.Sprintf("Service ports %v, want %d", ports, port)
	})
	return svc
}

// versions maps the sample Backend and its Service to their resourceVersions.
func versions(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{"Backend": get(t, ns, "web").GetResourceVersion()}
	if s := env.Get(t, "v1", "Service", ns, "web"); s != nil {
		out["Service"] = s.GetResourceVersion()
	}
	return out
}

func status(obj *unstructured.Unstructured, field string) string {
	s, _, _ := unstructured.NestedString(obj.Object, "status", field)
	return s
}
