// Package reconcile is the one reconcile skeleton every controller kind runs. A Runner
// watches a controller's parent and child resources through shared informers, maps every
// event to a Request naming one parent (through named indexes, never a scan), and reconciles
// each parent from the cache in one order:
//
//	gather   the parent and the children it claims (engine/claim's decision table)
//	decide   the Kind asks for hook calls, the skeleton makes them, the Kind validates the answers
//	claim    adoptions and releases are carried out
//	apply    desired children are applied, children no longer desired are deleted
//	parent   the Kind's parent write (status, labels, annotations), then finalizers
//
// with one failure rule: a decide step that fails in any way (the hook throws, exhausts a
// budget, returns something invalid, the webhook is down) writes nothing at all. Writes the
// API server refuses after a valid decision are reported on the parent: a Warning Event and
// the condition Synced=False naming the object and the server's message; the parent is
// retried with backoff.
//
// A controller kind contributes only what differs, through the Kind interface: which
// parents it acts on, how a parent claims children, the hook request and response shapes
// (built and read with engine/protocol), and how the parent itself is written. The objects a
// customize hook relates to a parent are kept by engine/related.
package reconcile

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"metascript.dev/metascript/engine/apply"
	"metascript.dev/metascript/engine/claim"
	"metascript.dev/metascript/engine/index"
	"metascript.dev/metascript/engine/protocol"
	"metascript.dev/metascript/engine/resources"
)

// Request names one parent: the index of its resource in Config.Parents and its cache key
// (namespace/name, or name when cluster-scoped). It carries no event payload: the reconcile
// reads the parent's current state from the cache.
type Request struct {
	Resource int
	Key      string
}

// ParentResource is a resource whose objects the controller reconciles.
type ParentResource struct {
	resources.Resource
	// IgnoreStatusChanges drops update events that change nothing but the status.
	IgnoreStatusChanges bool
}

// Kind is a controller kind's front door into the skeleton. Its methods are called
// concurrently for different parents and must not modify the cached objects they are given.
type Kind interface {
	// Selects reports whether the controller acts on parent, an object of
	// Config.Parents[resource] (parent label or annotation selectors). It is called from
	// event handlers and must be cheap.
	Selects(resource int, parent *unstructured.Unstructured) bool
	// Claimant says how parent claims children: by selector (adopting matching orphans) or
	// by mark (only children carrying the controller's mark). An error stops the reconcile
	// before the hook is called and is reported as a Warning Event (InvalidSelector).
	Claimant(parent *unstructured.Unstructured) (claim.Parent, error)
	// Ask says which hook calls the parent needs, from what the skeleton gathered, and
	// returns them with what makes an outcome of their answers. The skeleton makes the
	// calls; an error here is reported like an invalid answer and writes nothing.
	Ask(d *Gathered) (Asked, error)
}

// LabelSelected is implemented by a Kind whose Selects(resource, parent) is false unless
// ParentSelector(resource) matches the parent's labels: the runner's router then hands it
// only the events of parents that carry one of the values of the selector's first equality
// requirement (see router.go). A Kind without it hears every parent event.
type LabelSelected interface {
	ParentSelector(resource int) labels.Selector
}

// Asked is a kind's decision for one parent, waiting for the hooks' answers.
type Asked interface {
	// Calls are the hook calls to make. Calls without About are one decision: the skeleton
	// makes them in order and stops at the first failure, which writes nothing. Calls with
	// About stand alone (a MapController's map call per input): made concurrently, and a
	// failure is only that call's Answer.Err.
	Calls() []Call
	// Decide validates the answers, one per call in order, and returns what to write. It is
	// called once, after every call was made. An error means nothing is written; a
	// *protocol.InvalidResponseError is reported as InvalidHookResponse.
	Decide(answers []Answer) (*Outcome, error)
}

// Call is one hook call a kind asks for.
type Call struct {
	Hook string
	// About names the object the call is for ("PersistentVolumeClaim ns/data") when a hook is
	// called once per object of a parent; it appears in the failure's Event and log line.
	About   string
	Request map[string]any
}

// Answer is what one Call returned: its response, or why it failed. A failure has already
// been counted, logged and reported as a Warning Event on the parent.
type Answer struct {
	Response map[string]any
	Err      error
}

// Watches declares how events reach a controller's parents, in the spirit of
// controller-runtime's For / Owns / Watches. The skeleton always routes the parents' own
// events (Config.Parents) and the events of the children they own (Config.Children) to the
// owner their ControllerRef names; a kind adds the rest here. Map functions run on the
// informers' goroutines: index lookups only, never a list or a request to the server.
type Watches struct {
	// ParentIndexes, when set, registers the indexes the map functions below look parents up
	// by, on each parent informer before any handler is added.
	ParentIndexes func(inf index.Informer) error
	// Orphans, when set, maps an orphan of a child resource to the parents that may adopt
	// it. Unset for kinds whose parents claim by mark and never adopt.
	Orphans MapFunc
	// OrphanSelector, when set with Orphans, returns the selector a parent adopts orphans by,
	// nil when it adopts none (its selector is invalid): the child informers then cache
	// only the orphans some parent's selector may match (orphans.go). Unset, they cache
	// every orphan.
	OrphanSelector func(parent *unstructured.Unstructured) labels.Selector
	// Owns, when set, accepts the children whose events concern this controller; unset, every
	// child does. A decorator's targets have children that are someone else's.
	Owns func(child *unstructured.Unstructured) bool
	// Inputs are resources the parents read that are not their children (a MapController's
	// inputs, a rollout's revisions), each with how an object finds the parents it concerns;
	// Gathered.Inputs holds their caches in this order.
	Inputs []Input
	// Forget, when set, is called when a parent leaves the cache: for a kind that keeps state
	// per parent.
	Forget func(parent *unstructured.Unstructured)
}

// MapFunc returns the parents obj concerns, looked up through the parents' caches (one per
// Config.Parents, in order). On an update it is called for the object as it was and as it
// is, so that a parent it stops concerning hears of it too.
type MapFunc func(obj *unstructured.Unstructured, parents []cache.Indexer) []Request

// Input is a watched resource the parents read that is not their child.
type Input struct {
	resources.Resource
	// Map returns the parents an object concerns. Unset, an object concerns the parent its
	// ControllerRef names, if any (a rollout's revisions, which the parent owns).
	Map MapFunc
}

// Gathered is what the skeleton gathered for one parent: the input of Kind.Ask.
type Gathered struct {
	Parent *unstructured.Unstructured
	// Resource is the index of the parent's resource in Config.Parents.
	Resource int
	// Hook is the hook to call: "sync", or "finalize" while Finalizing.
	Hook       string
	Finalizing bool
	// Observed holds the children the parent claims (kept and about to be adopted), by
	// index of Config.Children. Objects are the cache's own: read-only.
	Observed map[int][]*unstructured.Unstructured
	// Inputs are the caches of Watches.Inputs, by index: read-only.
	Inputs []cache.Indexer
	// Related is the request's related map (related.Tracker.Objects): the objects the
	// customize hook's rules select, or an empty map without a customize hook. Read-only.
	Related map[string]any
}

// Outcome is a validated decision: what the skeleton writes for one parent.
type Outcome struct {
	// Children are the desired children by index of Config.Children, each with its
	// namespace set. Claimed children of a rule that are neither desired nor Untouched are
	// deleted.
	Children map[int][]*unstructured.Unstructured
	// Untouched are observed children to leave exactly as they are: counted as the parent's,
	// neither updated nor deleted (the outputs of an input whose map call failed, or that
	// needed no new call).
	Untouched map[*unstructured.Unstructured]bool
	// Prepare, when set, runs once the decision is valid and before any claim or child is
	// written: writes that must hold before children change (a rollout's revisions). Its
	// error stops the reconcile; nothing else is written.
	Prepare func(ctx context.Context) error
	// Status, when not nil, replaces the parent's status (CompositeController, MapController),
	// with Conditions put into its conditions; the skeleton keeps the engine's Synced
	// condition and lastTransitionTime while a condition's status stays, and sets
	// observedGeneration. Conditions alone (nil Status) replace the status with them.
	Status     map[string]any
	Conditions []map[string]any
	// Decoration, when not nil, is applied to the parent instead (DecoratorController): its
	// labels, annotations and status by server-side apply, keeping everyone else's.
	Decoration *apply.Decoration
	// ResyncAfter asks for one more reconcile of this parent after that long.
	ResyncAfter time.Duration
	// Events are what the hooks asked to record on the parent: recorded once the reconcile
	// wrote, within a rate per parent.
	Events []protocol.Event
	// Finalized, from the finalize hook, lets the skeleton remove the finalizer once every
	// write succeeded.
	Finalized bool
	// Written, when set, is called once the children are written, with each desired child's
	// object as now stored as far as the writes tell: the server's answer, the observed
	// object when nothing was sent, nil when the write failed or deleted it (Recreate).
	Written func(stored map[*unstructured.Unstructured]*unstructured.Unstructured)
	// Retry, when set, is a failure the kind isolated (one input's map call): everything
	// else is written, and the parent is retried with backoff.
	Retry error
	// Rejected are answers of calls with About that the kind found invalid while the rest of
	// the decision stands: each is counted as an invalid invocation and reported as an
	// InvalidHookResponse Warning Event.
	Rejected []Rejection
}

// Rejection is one invalid answer of a call with About.
type Rejection struct {
	Hook, About string
	Err         error
}
