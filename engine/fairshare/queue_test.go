package fairshare

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// queueItem is a test item: "TENANT/CONTROLLER/ID", served as the flow of its first two parts.
func queueItemFlow(item string) Flow {
	parts := strings.SplitN(item, "/", 3)
	return Flow{Tenant: parts[0], Controller: parts[1]}
}

func newTestQueue(metrics workqueue.MetricsProvider) *Queue[string] {
	return NewQueue(QueueConfig[string]{FlowOf: queueItemFlow, Name: "test", Metrics: metrics,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, time.Second)})
}

// TestQueueServesInTurn runs scripts of steps against a Queue of workers (0: no share):
// "+ITEM" adds it, "?ITEM" is a Get that must return it, "!" a Get that must wait, "-ITEM" is
// its Done, "#N" says N items wait.
func TestQueueServesInTurn(t *testing.T) {
	cases := []struct {
		name    string
		workers int
		steps   string
	}{
		{"one tenant: controllers in turn, a controller's items in the order they came",
			0, "+a/c1/x1 +a/c1/x2 +a/c2/y1 ?a/c1/x1 -a/c1/x1 ?a/c2/y1 -a/c2/y1 ?a/c1/x2 -a/c1/x2 #0"},
		{"tenants in turn, whatever order their items came in",
			0, "+a/1/1 +a/2/2 +a/3/3 +b/1/1 ?a/1/1 -a/1/1 ?b/1/1 -b/1/1 ?a/2/2 -a/2/2 ?a/3/3"},
		{"a tenant arriving while another holds every worker is served by the next worker free",
			0, "+a/1/1 +a/2/2 +a/3/3 +a/4/4 ?a/1/1 ?a/2/2 +b/1/1 -a/1/1 ?b/1/1 ?a/3/3"},
		{"the tenant with the fewest items in process goes first, then in turn",
			0, "+a/1/1 +a/2/2 ?a/1/1 +b/1/1 +b/2/2 +c/1/1 ?b/1/1 ?c/1/1 ?a/2/2 ?b/2/2"},
		{"an item queued twice is queued once",
			0, "+a/1/1 +a/1/1 +b/1/1 ?a/1/1 -a/1/1 ?b/1/1 -b/1/1 #0"},
		{"an item added while in process waits for its Done, and is queued once",
			0, "+a/1/1 ?a/1/1 +a/1/1 +a/1/1 #0 -a/1/1 #1 ?a/1/1 -a/1/1 #0"},
		{"a Done of an item not held changes nothing",
			0, "+a/1/1 -a/1/1 #1 ?a/1/1"},
		{"a tenant alone leaves one worker free, whatever it has queued",
			3, "+a/1/1 +a/2/2 +a/3/3 ?a/1/1 ?a/2/2 ! -a/1/1 ?a/3/3 !"},
		{"the worker left free serves the next tenant at once",
			3, "+a/1/1 +a/2/2 +a/3/3 ?a/1/1 ?a/2/2 +b/1/1 ?b/1/1 !"},
		{"beside another, a tenant holds its share; a worker freed goes to a tenant under its share",
			4, "+a/1/1 +a/2/2 +a/3/3 ?a/1/1 ?a/2/2 ?a/3/3 +b/1/1 +b/2/2 +b/3/3 ?b/1/1 ?b/2/2 ! -a/1/1 ! -b/1/1 ?b/3/3"},
		{"one worker serves whatever comes",
			1, "+a/1/1 +a/2/2 ?a/1/1 -a/1/1 ?a/2/2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := newTestQueue(nil)
			q.workers = c.workers
			defer q.ShutDown()
			for i, step := range strings.Fields(c.steps) {
				op, arg := step[0], step[1:]
				switch op {
				case '+':
					q.Add(arg)
				case '-':
					q.Done(arg)
				case '?':
					if got, down := q.Get(); down || got != arg {
						t.Fatalf("step %d (%s): Get = %q, shutdown %v", i, step, got, down)
					}
				case '!':
					q.mu.Lock()
					got, ok := q.take()
					q.mu.Unlock()
					if ok {
						t.Fatalf("step %d (%s): Get = %q, want it to wait", i, step, got)
					}
				case '#':
					if n := q.Len(); arg != string(rune('0'+n)) {
						t.Fatalf("step %d (%s): %d items wait", i, step, n)
					}
				}
			}
		})
	}
}

// TestQueueNoItemTwiceInProcess: however many adds, with or without shares, no item is held
// by two workers at once, and every item added is processed after its last add.
func TestQueueNoItemTwiceInProcess(t *testing.T) {
	for _, workers := range []int{0, 4} {
		t.Run(fmt.Sprintf("%d workers sharing", workers), func(t *testing.T) { noItemTwiceInProcess(t, workers) })
	}
}

func noItemTwiceInProcess(t *testing.T, workers int) {
	q := newTestQueue(nil)
	q.workers = workers
	items := []string{"a/1/1", "a/2/2", "b/1/1", "c/1/1"}
	var mu sync.Mutex
	held := map[string]bool{}
	addedSince := map[string]bool{} // added after its last Get
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				item, down := q.Get()
				if down {
					return
				}
				mu.Lock()
				if held[item] {
					t.Errorf("%s held by two workers", item)
				}
				held[item], addedSince[item] = true, false
				mu.Unlock()
				time.Sleep(50 * time.Microsecond)
				mu.Lock()
				held[item] = false
				mu.Unlock()
				q.Done(item)
			}
		})
	}
	for i := range 2000 {
		item := items[i%len(items)]
		mu.Lock()
		addedSince[item] = true
		mu.Unlock()
		q.Add(item)
	}
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, item := range items {
			if addedSince[item] || held[item] {
				return false
			}
		}
		return q.Len() == 0
	})
	q.ShutDown()
	wg.Wait()
}

// TestQueueDelays: AddAfter adds once its delay passed, the earlier of two delays winning;
// AddRateLimited backs off until Forget.
func TestQueueDelays(t *testing.T) {
	q := newTestQueue(nil)
	defer q.ShutDown()
	q.AddAfter("a/1/1", time.Hour)
	q.AddAfter("a/1/1", 10*time.Millisecond) // the earlier wins
	q.AddAfter("b/1/1", time.Hour)
	if got, _ := q.Get(); got != "a/1/1" {
		t.Fatalf("Get = %q, want a/1/1 after its shorter delay", got)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("%d items wait; b's delay is an hour", n)
	}
	q.Done("a/1/1")
	for want := 1; want <= 3; want++ {
		q.AddRateLimited("a/1/1")
		if got, _ := q.Get(); got != "a/1/1" {
			t.Fatalf("Get = %q", got)
		}
		q.Done("a/1/1")
		if n := q.NumRequeues("a/1/1"); n != want {
			t.Fatalf("NumRequeues = %d, want %d", n, want)
		}
	}
	q.Forget("a/1/1")
	if n := q.NumRequeues("a/1/1"); n != 0 {
		t.Fatalf("NumRequeues after Forget = %d", n)
	}
}

// TestQueueShutDown: a Get waiting, and every Get after, returns shutdown; nothing is added
// after it, not even by a delay that ends later.
func TestQueueShutDown(t *testing.T) {
	q := newTestQueue(nil)
	got := make(chan bool)
	go func() {
		_, down := q.Get()
		got <- down
	}()
	q.AddAfter("a/1/1", 20*time.Millisecond)
	q.ShutDown()
	if !<-got {
		t.Fatal("a waiting Get did not return shutdown")
	}
	q.Add("b/1/1")
	time.Sleep(40 * time.Millisecond)
	if _, down := q.Get(); !down || q.Len() != 0 {
		t.Fatalf("Get after ShutDown: shutdown %v, %d items wait", down, q.Len())
	}
}

// TestQueueMetrics: the queue reports client-go's work queue metrics under its name.
func TestQueueMetrics(t *testing.T) {
	p := &countingProvider{values: map[string]float64{}}
	q := newTestQueue(p)
	defer q.ShutDown()
	q.Add("a/1/1")
	q.Add("a/1/1")
	q.Add("b/1/1")
	if p.get("test/depth") != 2 || p.get("test/adds") != 2 {
		t.Fatalf("after two adds: %v", p.snapshot())
	}
	item, _ := q.Get()
	waitFor(t, func() bool { return p.get("test/longest") > 0 }) // refreshed while it is held
	q.Done(item)
	q.AddRateLimited(item)
	if p.get("test/depth") != 1 || p.get("test/latency") != 1 || p.get("test/work") != 1 || p.get("test/retries") != 1 {
		t.Fatalf("after a Get, a Done and a retry: %v", p.snapshot())
	}
}

// countingProvider records metrics by "NAME/METRIC": gauges' values, the count of
// observations, counters' counts.
type countingProvider struct {
	mu     sync.Mutex
	values map[string]float64
}

type countingMetric struct {
	p   *countingProvider
	key string
}

func (m countingMetric) Inc() { m.p.add(m.key, 1) }
func (m countingMetric) Dec() { m.p.add(m.key, -1) }
func (m countingMetric) Set(v float64) {
	m.p.mu.Lock()
	defer m.p.mu.Unlock()
	m.p.values[m.key] = v
}
func (m countingMetric) Observe(float64) { m.p.add(m.key, 1) }

func (p *countingProvider) add(key string, d float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.values[key] += d
}

func (p *countingProvider) get(key string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.values[key]
}

func (p *countingProvider) snapshot() map[string]float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]float64{}
	for k, v := range p.values {
		out[k] = v
	}
	return out
}

func (p *countingProvider) metric(name, metric string) countingMetric {
	return countingMetric{p: p, key: name + "/" + metric}
}

func (p *countingProvider) NewDepthMetric(n string) workqueue.GaugeMetric {
	return p.metric(n, "depth")
}
func (p *countingProvider) NewAddsMetric(n string) workqueue.CounterMetric {
	return p.metric(n, "adds")
}
func (p *countingProvider) NewLatencyMetric(n string) workqueue.HistogramMetric {
	return p.metric(n, "latency")
}
func (p *countingProvider) NewWorkDurationMetric(n string) workqueue.HistogramMetric {
	return p.metric(n, "work")
}
func (p *countingProvider) NewUnfinishedWorkSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return p.metric(n, "unfinished")
}
func (p *countingProvider) NewLongestRunningProcessorSecondsMetric(n string) workqueue.SettableGaugeMetric {
	return p.metric(n, "longest")
}
func (p *countingProvider) NewRetriesMetric(n string) workqueue.CounterMetric {
	return p.metric(n, "retries")
}
