package scale

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// observer counts, from its own watches of one namespace, the parents whose status is
// written and the ConfigMaps a parent controls, and samples both every second. Watches, not
// lists: at 10,000 parents a list per second would load the API server more than the work
// measured.
type observer struct {
	parents, children int // expected: parents, and children per parent

	mu       sync.Mutex
	status   map[string]bool // parent name → status written
	statuses int
	owned    map[string]bool // ConfigMap name → controlled by a parent
	owns     int
	start    time.Time     // of the phase; zero until begin
	first    time.Time     // the first child was seen
	at       time.Time     // everything converged
	samples  []sample      // one a second until convergence
	done     chan struct{} // closed at convergence
	stop     context.CancelFunc
	tickDone chan struct{}
}

// sample is what the observer saw at one elapsed second.
type sample struct {
	elapsed            time.Duration
	statuses, children int
}

// observe starts watches of ns, synced when it returns, that stop with stop or ctx.
func observe(ctx context.Context, cfg *rest.Config, ns string, parents, children int) (*observer, error) {
	ctx, cancel := context.WithCancel(ctx)
	o := &observer{parents: parents, children: children, status: map[string]bool{}, owned: map[string]bool{},
		done: make(chan struct{}), stop: cancel}
	// Status: parents whole, less managedFields; children: metadata only, less managedFields,
	// which is all a count needs and a tenth of the bytes.
	dyn := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0, ns, nil)
	meta := metadatainformer.NewFilteredSharedInformerFactory(metadata.NewForConfigOrDie(cfg), 0, ns, nil)
	parentInf := dyn.ForResource(fanouts).Informer()
	childInf := meta.ForResource(configMaps).Informer()
	strip := func(obj any) (any, error) {
		if m, ok := obj.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return obj, nil
	}
	for _, inf := range []cache.SharedIndexInformer{parentInf, childInf} {
		if err := inf.SetTransform(strip); err != nil {
			cancel()
			return nil, err
		}
	}
	handler := func(on func(obj any, exists bool)) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { on(obj, true) },
			UpdateFunc: func(_, obj any) { on(obj, true) },
			DeleteFunc: func(obj any) {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				on(obj, false)
			},
		}
	}
	if _, err := parentInf.AddEventHandler(handler(o.parent)); err != nil {
		cancel()
		return nil, err
	}
	if _, err := childInf.AddEventHandler(handler(o.child)); err != nil {
		cancel()
		return nil, err
	}
	dyn.Start(ctx.Done())
	meta.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), parentInf.HasSynced, childInf.HasSynced) {
		cancel()
		return nil, fmt.Errorf("the watches of %s did not sync: %w", ns, ctx.Err())
	}
	return o, nil
}

// begin starts the phase's clock and the samples, one a second.
func (o *observer) begin(ctx context.Context) {
	o.mu.Lock()
	o.start = time.Now()
	o.mu.Unlock()
	o.tickDone = make(chan struct{})
	go func() {
		defer close(o.tickDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-o.done:
				return
			case <-tick.C:
				o.mu.Lock()
				o.samples = append(o.samples, sample{time.Since(o.start).Round(time.Second), o.statuses, o.owns})
				o.mu.Unlock()
			}
		}
	}()
}

// end stops the watches and the samples.
func (o *observer) end() {
	o.stop()
	if o.tickDone != nil {
		<-o.tickDone
	}
}

func (o *observer) parent(obj any, exists bool) {
	p, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	n, _, _ := unstructured.NestedInt64(p.Object, "status", "children")
	g, _, _ := unstructured.NestedInt64(p.Object, "status", "observedGeneration")
	written := exists && n == int64(o.children) && g == p.GetGeneration()
	o.mu.Lock()
	defer o.mu.Unlock()
	if written != o.status[p.GetName()] {
		if written {
			o.statuses++
		} else {
			o.statuses--
		}
	}
	o.status[p.GetName()] = written
	o.check()
}

func (o *observer) child(obj any, exists bool) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(m)
	owned := exists && ref != nil && ref.Kind == "Fanout"
	o.mu.Lock()
	defer o.mu.Unlock()
	if owned != o.owned[m.GetName()] {
		if owned {
			o.owns++
			if o.first.IsZero() {
				o.first = time.Now()
			}
		} else {
			o.owns--
		}
	}
	if owned {
		o.owned[m.GetName()] = true
	} else {
		delete(o.owned, m.GetName())
	}
	o.check()
}

// check closes done the first time every parent has its status and its children, once the
// phase has begun. o.mu is held.
func (o *observer) check() {
	if o.start.IsZero() || !o.at.IsZero() || o.statuses != o.parents || o.owns != o.parents*o.children {
		return
	}
	o.at = time.Now()
	close(o.done)
}

// counts returns the parents with status and the children seen now.
func (o *observer) counts() (statuses, children int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.statuses, o.owns
}

// result returns how long after begin the first child was seen and everything converged,
// and the samples.
func (o *observer) result() (first, converged time.Duration, samples []sample) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.first.IsZero() {
		first = o.first.Sub(o.start)
	}
	return first, o.at.Sub(o.start), append([]sample(nil), o.samples...)
}
