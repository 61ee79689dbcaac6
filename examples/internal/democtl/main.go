// Command democtl is the little kubectl that examples/demo.sh needs, so that the demo runs
// where kubectl is not installed:
//
//	democtl -kubeconfig FILE apply FILE...           server-side apply every document; waits for CRDs to be established
//	democtl -kubeconfig FILE wait API KIND NS NAME   until status.observedGeneration is current and Ready is True
//	democtl -kubeconfig FILE tree API KIND NS NAME   the object's status and the objects it controls
//	democtl wait-http URL                            until URL answers 200
//
// Every wait gives up after -timeout and then prints what it saw last.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

const fieldManager = "metascript-demo"

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file")
	timeout := flag.Duration("timeout", 90*time.Second, "how long a wait may take")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: democtl [-kubeconfig FILE] [-timeout D] apply FILE... | wait API KIND NS NAME | tree API KIND NS NAME | wait-http URL")
	}
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var err error
	switch {
	case args[0] == "wait-http" && len(args) == 2:
		err = waitHTTP(ctx, args[1])
	case args[0] == "apply" && len(args) > 1:
		err = withClient(*kubeconfig, func(c *client) error { return c.apply(ctx, args[1:]) })
	case args[0] == "wait" && len(args) == 5:
		err = withClient(*kubeconfig, func(c *client) error { return c.waitReady(ctx, args[1], args[2], args[3], args[4]) })
	case args[0] == "tree" && len(args) == 5:
		err = withClient(*kubeconfig, func(c *client) error { return c.tree(ctx, args[1], args[2], args[3], args[4]) })
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "democtl:", err)
		os.Exit(1)
	}
}

type client struct {
	dyn    dynamic.Interface
	disc   discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func withClient(kubeconfig string, f func(*client) error) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	disc := memory.NewMemCacheClient(dc)
	return f(&client{dyn: dynamic.NewForConfigOrDie(cfg), disc: disc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disc)})
}

// resource maps apiVersion and kind to a client, in namespace ns when the resource is
// namespaced. Discovery is refreshed once when the kind is unknown (a CRD just installed).
func (c *client) resource(apiVersion, kind, ns string) (dynamic.ResourceInterface, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, false, err
	}
	m, err := c.mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	}
	if err != nil {
		return nil, false, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if ns == "" {
			ns = "default"
		}
		return c.dyn.Resource(m.Resource).Namespace(ns), true, nil
	}
	return c.dyn.Resource(m.Resource), false, nil
}

func (c *client) apply(ctx context.Context, files []string) error {
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if obj == nil {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			if err := c.applyOne(ctx, u); err != nil {
				return fmt.Errorf("%s: %s %s: %w", file, u.GetKind(), u.GetName(), err)
			}
			fmt.Printf("  applied %s %s\n", strings.ToLower(u.GetKind()), u.GetName())
		}
	}
	return nil
}

func (c *client) applyOne(ctx context.Context, u *unstructured.Unstructured) error {
	var (
		r   dynamic.ResourceInterface
		err error
	)
	// A kind defined by a CRD applied a moment ago is served only once the CRD is established.
	for {
		if r, _, err = c.resource(u.GetAPIVersion(), u.GetKind(), u.GetNamespace()); !meta.IsNoMatchError(err) {
			break
		}
		if !sleep(ctx, 250*time.Millisecond) {
			return err
		}
	}
	if err != nil {
		return err
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	if _, err := r.Patch(ctx, u.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: fieldManager, Force: &force}); err != nil {
		return err
	}
	if u.GetKind() == "CustomResourceDefinition" {
		return c.waitEstablished(ctx, r, u.GetName())
	}
	return nil
}

func (c *client) waitEstablished(ctx context.Context, r dynamic.ResourceInterface, name string) error {
	for {
		crd, err := r.Get(ctx, name, metav1.GetOptions{})
		if err == nil && conditionStatus(crd, "Established") == "True" {
			c.mapper.Reset()
			return nil
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return fmt.Errorf("CRD %s not established: %v", name, ctx.Err())
		}
	}
}

// waitReady waits until the object's status reports its current generation and a Ready
// condition that is True.
func (c *client) waitReady(ctx context.Context, apiVersion, kind, ns, name string) error {
	r, _, err := c.resource(apiVersion, kind, ns)
	if err != nil {
		return err
	}
	last := "not found"
	for {
		obj, err := r.Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			g, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
			ready := conditionStatus(obj, "Ready")
			if g == obj.GetGeneration() && ready == "True" {
				return nil
			}
			if g == obj.GetGeneration() && conditionStatus(obj, "HooksCompiled") == "False" {
				// A controller whose hooks do not compile stays so until it is edited.
				return fmt.Errorf("%s %s cannot run:\n%s", strings.ToLower(kind), name, toYAML(obj.Object["status"]))
			}
			last = fmt.Sprintf("generation %d, observedGeneration %d, Ready %q; status:\n%s",
				obj.GetGeneration(), g, ready, toYAML(obj.Object["status"]))
		case !apierrors.IsNotFound(err) && !errors.Is(err, context.DeadlineExceeded):
			last = err.Error()
		}
		if !sleep(ctx, 250*time.Millisecond) {
			return fmt.Errorf("%s %s is not ready; last seen: %s", strings.ToLower(kind), name, last)
		}
	}
}

// tree prints the object's status and every ConfigMap, Secret and Service of its namespace
// that it controls.
func (c *client) tree(ctx context.Context, apiVersion, kind, ns, name string) error {
	r, namespaced, err := c.resource(apiVersion, kind, ns)
	if err != nil {
		return err
	}
	obj, err := r.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if namespaced && ns == "" {
		ns = "default"
	}
	fmt.Printf("%s %s\n", kind, name)
	fmt.Printf("  status:\n%s", indent(toYAML(obj.Object["status"]), "    "))
	var lines []string
	for _, k := range []struct{ apiVersion, kind string }{{"v1", "ConfigMap"}, {"v1", "Service"}, {"v1", "Secret"}} {
		cr, _, err := c.resource(k.apiVersion, k.kind, ns)
		if err != nil {
			return err
		}
		list, err := cr.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, item := range list.Items {
			if ref := metav1.GetControllerOfNoCopy(&item); ref != nil && ref.UID == obj.GetUID() {
				lines = append(lines, fmt.Sprintf("    %-10s %-22s created %s", k.kind, item.GetName(),
					item.GetCreationTimestamp().Format(time.TimeOnly)))
			}
		}
	}
	sort.Strings(lines)
	fmt.Printf("  children (controlled by %s %s):\n%s\n", kind, name, strings.Join(lines, "\n"))
	return nil
}

func waitHTTP(ctx context.Context, url string) error {
	last := ""
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if !sleep(ctx, 250*time.Millisecond) {
			return fmt.Errorf("%s did not answer 200; last: %s", url, last)
		}
	}
}

func conditionStatus(obj *unstructured.Unstructured, typ string) string {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

func toYAML(v any) string {
	if v == nil {
		return "{}\n"
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprint(v) + "\n"
	}
	return string(out)
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix) + "\n"
}

// sleep waits d, or returns false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}
