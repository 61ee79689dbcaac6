package reconcile

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"metascript.dev/metascript/engine/protocol"
)

// The rate at which a parent's hooks may record Events: a burst, then one per interval. A
// hook that emits an Event on every sync (every resync, every child's status change) so
// leaves a few on the parent instead of hundreds, and the Events the engine itself records
// about the parent, which client-go's correlator rate-limits in the same budget, still pass.
const (
	hookEventBurst    = 10
	hookEventInterval = time.Minute
	hookEventBuckets  = 4096 // parents tracked before full buckets are dropped
)

// eventLimiter is a token bucket per parent. It is safe for concurrent use.
type eventLimiter struct {
	mu      sync.Mutex
	buckets map[types.UID]*eventBucket
}

type eventBucket struct {
	tokens float64
	at     time.Time
}

// allow takes one token of uid's bucket at now, if it has one.
func (l *eventLimiter) allow(uid types.UID, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[types.UID]*eventBucket{}
	}
	b := l.buckets[uid]
	if b == nil {
		if len(l.buckets) >= hookEventBuckets {
			l.dropFull(now)
		}
		for uid := range l.buckets { // still too many: any parent's limit starts over
			if len(l.buckets) < hookEventBuckets {
				break
			}
			delete(l.buckets, uid)
		}
		b = &eventBucket{tokens: hookEventBurst, at: now}
		l.buckets[uid] = b
	}
	b.tokens = min(hookEventBurst, b.tokens+now.Sub(b.at).Seconds()/hookEventInterval.Seconds())
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// dropFull forgets the buckets refilled to the burst: a new one is the same. l.mu is held.
func (l *eventLimiter) dropFull(now time.Time) {
	for uid, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()/hookEventInterval.Seconds() >= hookEventBurst {
			delete(l.buckets, uid)
		}
	}
}

// recordHookEvents records the Events the hooks asked for on parent, within the rate, with
// Env.HookEvents: as the controller's account when it has one, since their words are the
// hooks'.
func (r *Runner) recordHookEvents(parent *unstructured.Unstructured, events []protocol.Event) {
	now := time.Now()
	for _, ev := range events {
		if !r.hookEvents.allow(parent.GetUID(), now) {
			r.cfg.Metrics.HookEvents.WithLabelValues(r.name, "limited").Inc()
			continue
		}
		rec := r.cfg.HookEvents
		if rec == nil {
			rec = r.cfg.Recorder
		}
		rec.Event(parent, ev.Type, ev.Reason, ev.Message)
		r.cfg.Metrics.HookEvents.WithLabelValues(r.name, "recorded").Inc()
	}
}
