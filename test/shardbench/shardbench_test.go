// Package shardbench measures the same work done by 1, 2 and 3 engines sharing it
// (`metascript run --sharding`), each a process of its own on one machine: PARENTS Fanouts
// (default 2,000) of CHILDREN ConfigMaps (default 5), created once every member reconciles
// its share. For each member count it reports the wall time to convergence, each member's
// CPU time and peak RSS, their total against one engine's, and the API server's CPU time.
//
//	make bench-shards
//	go test -count=1 -timeout 60m -run '^TestShardBench$' -v ./test/shardbench/ -members=1,2,3 -parents=2000 -children=5
//
// Each member count runs on a fresh control plane. Numbers are logged, never asserted.
// Without -members (or METASCRIPT_SHARDBENCH=1) only TestShardBenchSmoke runs: 2 members,
// 20 parents, with checks that every measurement is made.
package shardbench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/test/engineproc"
	"metascript.dev/metascript/test/enginetest"
)

var (
	flagMembers  = flag.String("members", "", "comma-separated member counts, one run each (TestShardBench runs only when set, or METASCRIPT_SHARDBENCH is)")
	flagParents  = flag.Int("parents", 2000, "parents")
	flagChildren = flag.Int("children", 5, "children per parent")
	flagWorkers  = flag.Int("workers", 5, "engine workers per controller")
)

const namespace = "shardbench"

var controllers = schema.GroupVersionResource{Group: "metascript.dev", Version: "v1alpha1", Resource: "compositecontrollers"}

type result struct {
	members   int
	took      time.Duration
	cpu       []float64 // per member, from the creation of the first parent to convergence
	rss       []int64   // per member, peak
	apiserver float64
}

func (r result) total() (cpu float64, rss int64) {
	for i := range r.cpu {
		cpu += r.cpu[i]
		rss += r.rss[i]
	}
	return cpu, rss
}

func TestShardBench(t *testing.T) {
	spec := *flagMembers
	if spec == "" && os.Getenv("METASCRIPT_SHARDBENCH") != "" {
		spec = "1,2,3"
	}
	if spec == "" {
		t.Skip("set -members (make bench-shards) to run")
	}
	var results []result
	for _, s := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			t.Fatalf("-members: %q", s)
		}
		r := run(t, n, *flagParents, *flagChildren)
		results = append(results, r)
		report(t, results[0], r)
	}
	t.Logf("%d parents x %d children, %d workers:", *flagParents, *flagChildren, *flagWorkers)
	for _, r := range results {
		report(t, results[0], r)
	}
}

func TestShardBenchSmoke(t *testing.T) {
	if *flagMembers != "" || os.Getenv("METASCRIPT_SHARDBENCH") != "" {
		t.Skip("the benchmark runs instead")
	}
	r := run(t, 2, 20, 2)
	for i := range r.cpu {
		if r.cpu[i] <= 0 || r.rss[i] <= 0 {
			t.Errorf("member %d: CPU %v s, peak RSS %d: not measured", i, r.cpu[i], r.rss[i])
		}
	}
	if r.took <= 0 || r.apiserver <= 0 {
		t.Errorf("took %v, API server CPU %v: not measured", r.took, r.apiserver)
	}
	report(t, r, r)
}

func report(t *testing.T, one, r result) {
	cpu, rss := r.total()
	oneCPU, oneRSS := one.total()
	var each []string
	for i := range r.cpu {
		each = append(each, fmt.Sprintf("%.2f s/%d MiB", r.cpu[i], r.rss[i]>>20))
	}
	t.Logf("  %d member(s): converged in %.1f s; per member CPU/peak RSS: %s; total CPU %.2f s (%.2fx one engine), total RSS %d MiB (%.2fx); API server CPU %.2f s",
		r.members, r.took.Seconds(), strings.Join(each, ", "), cpu, cpu/oneCPU, rss>>20, float64(rss)/float64(oneRSS), r.apiserver)
}

// run converges parents x children with n members on a fresh control plane.
func run(t *testing.T, n, parents, children int) result {
	c := engineproc.StartCluster(t, namespace, false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	admin := c.Admin
	var engines []*engineproc.Process
	for range n {
		engines = append(engines, c.Engine(t, fmt.Sprintf("engine-%d", len(engines)), *flagWorkers, "--sharding", "--leader-elect-namespace", "default"))
	}
	engineproc.WaitReady(t, ctx, engines...)
	apiPID, err := c.APIServerPID()
	if err != nil {
		t.Fatal(err)
	}
	cpu := func() (each []float64, api float64) {
		for _, e := range engines {
			s, err := engineproc.CPUSeconds(e.Pid())
			if err != nil {
				t.Fatal(err)
			}
			each = append(each, s)
		}
		api, err := engineproc.CPUSeconds(apiPID)
		if err != nil {
			t.Fatal(err)
		}
		return each, api
	}

	converged := watchConverged(t, ctx, admin, parents, children)
	startCPU, startAPI := cpu()
	start := time.Now()
	if err := enginetest.Parallel(ctx, 16, parents, func(ctx context.Context, i int) error {
		_, err := admin.Resource(enginetest.Fanouts).Namespace(namespace).Create(ctx,
			enginetest.Fanout(fmt.Sprintf("p%05d", i), children), metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-converged:
	case <-ctx.Done():
		t.Fatal("parents did not converge")
	}
	r := result{members: n, took: time.Since(start)}
	endCPU, endAPI := cpu()
	for i, e := range engines {
		r.cpu = append(r.cpu, endCPU[i]-startCPU[i])
		rss, err := engineproc.PeakRSS(e.Pid())
		if err != nil {
			t.Fatal(err)
		}
		r.rss = append(r.rss, rss)
	}
	r.apiserver = endAPI - startAPI
	return r
}

// watchConverged returns a channel closed once every one of parents Fanouts says in its
// status that it has its children, as a watch shows them: no polling load on the server.
func watchConverged(t *testing.T, ctx context.Context, admin dynamic.Interface, parents, children int) <-chan struct{} {
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(admin, 0, namespace, nil)
	inf := factory.ForResource(enginetest.Fanouts).Informer()
	done := make(chan struct{})
	var count atomic.Int64
	seen := map[string]bool{} // handlers of one informer run one at a time
	check := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || seen[u.GetName()] {
			return
		}
		if c, _, _ := unstructured.NestedInt64(u.Object, "status", "children"); c == int64(children) {
			seen[u.GetName()] = true
			if count.Add(1) == int64(parents) {
				close(done)
			}
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: check, UpdateFunc: func(_, cur any) { check(cur) }}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	t.Cleanup(factory.Shutdown)
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	return done
}
