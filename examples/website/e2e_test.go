package website

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"metascript.dev/metascript/examples/internal/exampletest"
	"metascript.dev/metascript/scripting"
	"metascript.dev/metascript/test/enginetest"
)

// The e2e tests run the engine in-process against a real kube-apiserver and etcd, install
// the example's CRD, then its controller in each language, and drive the sample through
// create, edit, child deletion and deletion. No kube-controller-manager runs, so nothing but
// the engine deletes children: the finalize hook's teardown is what removes them.

var env *enginetest.Env

func TestMain(m *testing.M) {
	enginetest.Main(m, enginetest.Options{CRDDirs: []string{"crd.yaml"}}, &env)
}

const (
	websiteAPI = "examples.metascript.dev/v1alpha1"
	finalizer  = "metascript.dev/compositecontroller-website"
	uidLabel   = "metascript.dev/controller-uid"
	wait       = 30 * time.Second
)

// languages are the two implementations of the controller; each test runs against both.
var languages = []struct {
	name string
	lang scripting.Language
	file string
}{
	{"starlark", scripting.Starlark, "controller-starlark.yaml"},
	{"javascript", scripting.JavaScript, "controller-javascript.yaml"},
}

// stdlibModules are the stdlib modules the controllers use, as predeclared globals.
var stdlibModules = []string{"base64", "hash", "json", "k8s"}

// requireLanguage fails the test unless the engine runs hooks in lang that use the stdlib
// modules the controllers need.
func requireLanguage(t *testing.T, lang scripting.Language) {
	t.Helper()
	exampletest.RequireSupport(t, env.Engine.Runtime, lang, stdlibModules...)
}

// installController creates the controller of file, waits until it runs, and on cleanup
// deletes it and waits until its runner has stopped, so that the next test may install a
// controller of the same name.
func installController(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	cc := env.Create(t, "", enginetest.ObjectsFromFile(t, file)[0])
	t.Cleanup(func() {
		env.Delete(t, cc)
		enginetest.Eventually(t, wait, func() (bool, string) {
			n := gauge(t, env.Engine.Metrics.Controllers.WithLabelValues("running"))
			return env.Get(t, cc.GetAPIVersion(), cc.GetKind(), "", cc.GetName()) == nil && n == 0,
				fmt.Sprintf("controller still present or %v runners running", n)
		})
	})
	return waitControllerRunning(t, cc.GetName(), cc.GetGeneration())
}

// waitControllerRunning waits until the controller's status reports generation compiled and
// ready.
func waitControllerRunning(t *testing.T, name string, generation int64) *unstructured.Unstructured {
	t.Helper()
	var cc *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		cc = env.Get(t, "metascript.dev/v1alpha1", "CompositeController", "", name)
		g, _, _ := unstructured.NestedInt64(cc.Object, "status", "observedGeneration")
		return g == generation && enginetest.Condition(cc, "HooksCompiled") == "True" && enginetest.Condition(cc, "Ready") == "True",
			fmt.Sprintf("controller status = %v", cc.Object["status"])
	})
	return cc
}

func createSample(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	return env.Create(t, ns, enginetest.ObjectsFromFile(t, "sample.yaml")[0])
}

func getSite(t *testing.T, ns, name string) *unstructured.Unstructured {
	return env.Get(t, websiteAPI, "Website", ns, name)
}

// children returns the children the sample should have, by "Kind/name", as they are now
// (nil for those that do not exist).
func children(t *testing.T, ns string) map[string]*unstructured.Unstructured {
	t.Helper()
	return map[string]*unstructured.Unstructured{
		"ConfigMap/hello-pages": env.Get(t, "v1", "ConfigMap", ns, "hello-pages"),
		"ConfigMap/hello-nginx": env.Get(t, "v1", "ConfigMap", ns, "hello-nginx"),
		"Service/hello":         env.Get(t, "v1", "Service", ns, "hello"),
		"Secret/hello-htpasswd": env.Get(t, "v1", "Secret", ns, "hello-htpasswd"),
	}
}

// waitConverged waits until the site's status reports its current generation, Ready, and
// the given number of children of each kind.
func waitConverged(t *testing.T, ns string, counts map[string]any) *unstructured.Unstructured {
	t.Helper()
	var site *unstructured.Unstructured
	enginetest.Eventually(t, wait, func() (bool, string) {
		site = getSite(t, ns, "hello")
		g, _, _ := unstructured.NestedInt64(site.Object, "status", "observedGeneration")
		got, _, _ := unstructured.NestedMap(site.Object, "status", "children")
		return g == site.GetGeneration() && enginetest.Condition(site, "Ready") == "True" && reflect.DeepEqual(got, counts),
			fmt.Sprintf("generation %d, status = %v", site.GetGeneration(), site.Object["status"])
	})
	return site
}

func TestWebsite(t *testing.T) {
	for _, l := range languages {
		t.Run(l.name, func(t *testing.T) {
			requireLanguage(t, l.lang)
			installController(t, l.file)
			ns := env.Namespace(t)
			site := createSample(t, ns)

			// Converge: four children, each controlled by the site and labelled with its UID,
			// and a status that summarises them.
			site = waitConverged(t, ns, map[string]any{"ConfigMap": int64(2), "Service": int64(1), "Secret": int64(1)})
			kids := children(t, ns)
			for key, c := range kids {
				if c == nil {
					t.Fatalf("%s does not exist", key)
				}
				checkControlledBy(t, key, c, site)
			}
			pages, _, _ := unstructured.NestedStringMap(kids["ConfigMap/hello-pages"].Object, "data")
			if len(pages) != 2 || !strings.Contains(pages["index.html"], "Hello from Metascript") || pages["about.html"] == "" {
				t.Errorf("hello-pages data = %v, want index.html and about.html from the sample", pages)
			}
			conf, _, _ := unstructured.NestedString(kids["ConfigMap/hello-nginx"].Object, "data", "nginx.conf")
			for _, want := range []string{"listen 8080;", "server_name hello.example.com;", "auth_basic_user_file"} {
				if !strings.Contains(conf, want) {
					t.Errorf("nginx.conf lacks %q:\n%s", want, conf)
				}
			}
			svc := kids["Service/hello"]
			selector, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
			wantSelector := map[string]string{"app.kubernetes.io/name": "website", "app.kubernetes.io/instance": "hello"}
			if !reflect.DeepEqual(selector, wantSelector) {
				t.Errorf("Service selector = %v, want %v (the engine's UID label belongs on metadata only)", selector, wantSelector)
			}
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			if len(ports) != 1 || fmt.Sprint(ports[0].(map[string]any)["port"]) != "80" ||
				fmt.Sprint(ports[0].(map[string]any)["targetPort"]) != "8080" {
				t.Errorf("Service ports = %v, want 80 → 8080", ports)
			}
			htpasswd, _, _ := unstructured.NestedString(kids["Secret/hello-htpasswd"].Object, "data", "htpasswd")
			if got, _ := base64.StdEncoding.DecodeString(htpasswd); string(got) != "alice:{SHA}tiY7sUhYKUwI5L3866kDY+ENcrQ=\n" {
				t.Errorf("htpasswd = %q", got)
			}
			clusterIP, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP")
			checkStatus(t, site, map[string]any{"url": "http://hello.example.com/", "pages": int64(2), "clusterIP": clusterIP})
			if !contains(site.GetFinalizers(), finalizer) {
				t.Errorf("finalizers = %v, want %s", site.GetFinalizers(), finalizer)
			}
			firstHash, _, _ := unstructured.NestedString(site.Object, "status", "contentHash")

			// Steady state: a resync of the converged site writes nothing.
			checkNoWritesOnResync(t, ns)

			// Edit: a new domain, one page replaced, basic auth dropped. The pages and the
			// configuration follow in place, the Secret goes.
			env.Patch(t, site, `{"spec":{"domain":"www.example.org","basicAuth":null,
				"pages":{"about.html":null,"contact.html":"<p>write to us</p>"}}}`)
			site = waitConverged(t, ns, map[string]any{"ConfigMap": int64(2), "Service": int64(1), "Secret": int64(0)})
			kids = children(t, ns)
			if s := kids["Secret/hello-htpasswd"]; s != nil && s.GetDeletionTimestamp() == nil {
				t.Errorf("Secret hello-htpasswd still exists after basicAuth was removed")
			}
			pages, _, _ = unstructured.NestedStringMap(kids["ConfigMap/hello-pages"].Object, "data")
			if _, ok := pages["about.html"]; ok || pages["contact.html"] != "<p>write to us</p>" || len(pages) != 2 {
				t.Errorf("hello-pages data after the edit = %v, want index.html and contact.html", pages)
			}
			conf, _, _ = unstructured.NestedString(kids["ConfigMap/hello-nginx"].Object, "data", "nginx.conf")
			if !strings.Contains(conf, "server_name www.example.org;") || strings.Contains(conf, "auth_basic") {
				t.Errorf("nginx.conf after the edit:\n%s", conf)
			}
			checkStatus(t, site, map[string]any{"url": "http://www.example.org/", "pages": int64(2)})
			if h, _, _ := unstructured.NestedString(site.Object, "status", "contentHash"); h == firstHash || h == "" {
				t.Errorf("contentHash = %q after the pages changed, was %q", h, firstHash)
			}

			// A child deleted by someone else comes back.
			oldUID := kids["Service/hello"].GetUID()
			env.Delete(t, kids["Service/hello"])
			enginetest.Eventually(t, wait, func() (bool, string) {
				s := env.Get(t, "v1", "Service", ns, "hello")
				return s != nil && s.GetUID() != oldUID, "Service hello not recreated"
			})

			if warnings := warningEvents(t, ns, "hello"); len(warnings) > 0 {
				t.Errorf("Warning events on the site: %v", warnings)
			}

			// Deletion: the finalize hook tears the children down, then lets the site go.
			env.Delete(t, site)
			enginetest.Eventually(t, wait, func() (bool, string) {
				var left []string
				for key, c := range children(t, ns) {
					if c != nil {
						left = append(left, key)
					}
				}
				return getSite(t, ns, "hello") == nil && len(left) == 0,
					fmt.Sprintf("site exists: %v; children left: %v", getSite(t, ns, "hello") != nil, left)
			})
		})
	}
}

// TestSwapLanguage replaces the running Starlark controller with the JavaScript one: the
// engine recompiles and re-syncs every site, and since both give the same answers, no child
// and no status is written.
func TestSwapLanguage(t *testing.T) {
	for _, l := range languages {
		requireLanguage(t, l.lang)
	}
	cc := installController(t, languages[0].file)
	ns := env.Namespace(t)
	createSample(t, ns)
	site := waitConverged(t, ns, map[string]any{"ConfigMap": int64(2), "Service": int64(1), "Secret": int64(1)})
	before := versions(t, ns)
	reconciles := counter(t, env.Engine.Metrics.Reconciles.WithLabelValues("compositecontroller/website", "success"))

	// The engine writes the controller's status meanwhile: retry on a stale resourceVersion.
	swapped := enginetest.ObjectsFromFile(t, languages[1].file)[0]
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := env.Get(t, cc.GetAPIVersion(), cc.GetKind(), "", cc.GetName())
		cur.Object["spec"] = swapped.Object["spec"]
		out, err := env.Client(t, cur).Update(context.Background(), cur, metav1.UpdateOptions{})
		if err == nil {
			cc = out
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitControllerRunning(t, cc.GetName(), cc.GetGeneration())
	enginetest.Eventually(t, wait, func() (bool, string) {
		n := counter(t, env.Engine.Metrics.Reconciles.WithLabelValues("compositecontroller/website", "success"))
		return n > reconciles, "the site was not re-synced after the swap"
	})
	if after := versions(t, ns); !reflect.DeepEqual(after, before) {
		t.Errorf("resourceVersions changed when the language was swapped:\nbefore %v\nafter  %v", before, after)
	}
	env.Delete(t, site)
	enginetest.Eventually(t, wait, func() (bool, string) { return getSite(t, ns, "hello") == nil, "site not deleted" })
}

// checkNoWritesOnResync touches a label of the converged site, which makes the engine
// reconcile it again, and checks that neither the site nor any child was written.
func checkNoWritesOnResync(t *testing.T, ns string) {
	t.Helper()
	site := getSite(t, ns, "hello")
	reconciles := counter(t, env.Engine.Metrics.Reconciles.WithLabelValues("compositecontroller/website", "success"))
	site = env.Patch(t, site, fmt.Sprintf(`{"metadata":{"labels":{"resync":"%d"}}}`, time.Now().UnixNano()))
	before := versions(t, ns)
	enginetest.Eventually(t, wait, func() (bool, string) {
		n := counter(t, env.Engine.Metrics.Reconciles.WithLabelValues("compositecontroller/website", "success"))
		depth := env.Engine.Metrics.QueueDepth("compositecontroller/website")
		return n > reconciles && depth == 0, fmt.Sprintf("reconciles %v → %v, queue depth %v", reconciles, n, depth)
	})
	if after := versions(t, ns); !reflect.DeepEqual(after, before) {
		t.Errorf("a resync of a converged site wrote:\nbefore %v\nafter  %v", before, after)
	}
}

// versions maps the site and its children to their resourceVersions.
func versions(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{"Website/hello": getSite(t, ns, "hello").GetResourceVersion()}
	for key, c := range children(t, ns) {
		if c != nil {
			out[key] = c.GetResourceVersion()
		}
	}
	return out
}

func checkControlledBy(t *testing.T, key string, child, site *unstructured.Unstructured) {
	t.Helper()
	ref := metav1.GetControllerOf(child)
	if ref == nil || ref.UID != site.GetUID() || ref.Kind != "Website" || ref.Name != "hello" {
		t.Errorf("%s controller reference = %+v, want the Website hello (%s)", key, ref, site.GetUID())
	}
	if got := child.GetLabels()[uidLabel]; got != string(site.GetUID()) {
		t.Errorf("%s label %s = %q, want the site's UID", key, uidLabel, got)
	}
}

func checkStatus(t *testing.T, site *unstructured.Unstructured, want map[string]any) {
	t.Helper()
	status, _, _ := unstructured.NestedMap(site.Object, "status")
	for k, v := range want {
		if !reflect.DeepEqual(status[k], v) {
			t.Errorf("status.%s = %v (%T), want %v", k, status[k], status[k], v)
		}
	}
}

// warningEvents are the Warning Events about the Website (not its Service of the same name,
// which the API server's ClusterIP repair may warn about).
func warningEvents(t *testing.T, ns, name string) []string {
	t.Helper()
	list, err := env.Kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Website,involvedObject.name=" + name + ",type=Warning",
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Reason+": "+e.Message)
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

func gauge(t *testing.T, g any) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.(writer).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
