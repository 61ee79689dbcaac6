package wire

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/features"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Clients are the engine's two dynamic clients, which share one client-side rate limit.
type Clients struct {
	// Dynamic is for writes, and for reads whose answers are used as cached objects are:
	// its answers lack metadata.managedFields, which nothing but Whole(Dynamic) reads.
	Dynamic dynamic.Interface
	// Cache leaves out metadata.managedFields of what it lists and watches, and shares the
	// labels and ownerReferences its objects hold alike: for informers, whose objects are
	// read and never modified, nor written back whole.
	Cache dynamic.Interface
}

// NewClients returns the engine's dynamic clients for cfg. Each is client-go's dynamic
// client, with the same requests and media types (JSON; CBOR as well when client-go's
// ClientsAllowCBOR gate is on, and preferred for request bodies with ClientsPreferCBOR),
// but with JSON answers and watch events decoded in one pass by Decode.
func NewClients(cfg *rest.Config) (Clients, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.RateLimiter == nil {
		qps, burst := cfg.QPS, cfg.Burst
		if qps == 0 {
			qps = rest.DefaultQPS
		}
		if burst == 0 {
			burst = rest.DefaultBurst
		}
		if qps > 0 {
			cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
		}
	}
	dyn, err := NewDynamic(cfg)
	if err != nil {
		return Clients{}, err
	}
	cache, err := newDynamic(cfg, cached)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Dynamic: dyn, Cache: cache}, nil
}

// NewDynamic returns the client Clients.Dynamic is: answers without
// metadata.managedFields, and Whole of it keeping every field.
func NewDynamic(cfg *rest.Config) (dynamic.Interface, error) {
	answers, err := newDynamic(cfg, answer)
	if err != nil {
		return nil, err
	}
	all, err := newDynamic(cfg, whole)
	if err != nil {
		return nil, err
	}
	return answering{Interface: answers, whole: all}, nil
}

// answering is a dynamic client whose answers lack metadata.managedFields, with the twin that
// keeps them, on the same config and rate limit.
type answering struct {
	dynamic.Interface
	whole dynamic.Interface
}

// Whole returns the client of c that keeps every field of what it reads, managedFields
// among them: c's twin when c is a client of NewDynamic (or Clients.Dynamic), else c itself.
func Whole(c dynamic.Interface) dynamic.Interface {
	if a, ok := c.(answering); ok {
		return a.whole
	}
	return c
}

func newDynamic(cfg *rest.Config, s shape) (dynamic.Interface, error) {
	config := dynamic.ConfigFor(cfg)
	config.NegotiatedSerializer = negotiated(s)
	config.GroupVersion = nil
	config.APIPath = "/if-you-see-this-search-for-the-break" // as client-go's: every path is absolute
	restClient, err := rest.UnversionedRESTClientFor(config)
	if err != nil {
		return nil, err
	}
	return dynamic.New(restClient), nil
}

// metaScheme holds the meta/v1 types (Status, WatchEvent, options) a dynamic client decodes
// typed, as client-go's own dynamic scheme does.
var metaScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

func negotiated(s shape) runtime.NegotiatedSerializer {
	stock := json.NewSerializerWithOptions(json.DefaultMetaFactory, creater{metaScheme}, typer{metaScheme}, json.SerializerOptions{})
	pretty := json.NewSerializerWithOptions(json.DefaultMetaFactory, creater{metaScheme}, typer{metaScheme}, json.SerializerOptions{Pretty: true})
	stream := json.NewSerializerWithOptions(json.DefaultMetaFactory, metaScheme, metaScheme, json.SerializerOptions{})
	types := []runtime.SerializerInfo{{
		MediaType:        "application/json",
		MediaTypeType:    "application",
		MediaTypeSubType: "json",
		EncodesAsText:    true,
		Serializer:       serializer{next: stock, scheme: metaScheme, shape: s},
		PrettySerializer: pretty,
		StreamSerializer: &runtime.StreamSerializerInfo{
			EncodesAsText: true,
			Serializer:    serializer{next: stream, scheme: metaScheme, shape: s},
			Framer:        framer{},
		},
	}}
	if features.FeatureGates().Enabled(features.ClientsAllowCBOR) {
		types = append(types, runtime.SerializerInfo{
			MediaType:        "application/cbor",
			MediaTypeType:    "application",
			MediaTypeSubType: "cbor",
			Serializer:       cbor.NewSerializer(creater{metaScheme}, typer{metaScheme}),
			StreamSerializer: &runtime.StreamSerializerInfo{
				Serializer: cbor.NewSerializer(metaScheme, metaScheme, cbor.Transcode(false)),
				Framer:     cbor.NewFramer(),
			},
		})
	}
	return negotiatedSerializer{types}
}

type negotiatedSerializer struct{ types []runtime.SerializerInfo }

func (s negotiatedSerializer) SupportedMediaTypes() []runtime.SerializerInfo { return s.types }

func (s negotiatedSerializer) EncoderForVersion(e runtime.Encoder, gv runtime.GroupVersioner) runtime.Encoder {
	return runtime.WithVersionEncoder{Version: gv, Encoder: e, ObjectTyper: anyTyper{metaScheme}}
}

func (s negotiatedSerializer) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

// creater makes an unstructured object of any kind the scheme does not know.
type creater struct{ scheme *runtime.Scheme }

func (c creater) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	if obj, err := c.scheme.New(kind); err == nil {
		return obj, nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}

// typer types unstructured objects by their apiVersion and kind.
type typer struct{ scheme *runtime.Scheme }

func (t typer) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	kinds, unversioned, err := t.scheme.ObjectKinds(obj)
	if err == nil {
		return kinds, unversioned, nil
	}
	if _, ok := obj.(runtime.Unstructured); ok && !obj.GetObjectKind().GroupVersionKind().Empty() {
		return []schema.GroupVersionKind{obj.GetObjectKind().GroupVersionKind()}, false, nil
	}
	return nil, false, err
}

func (t typer) Recognizes(schema.GroupVersionKind) bool { return true }

// anyTyper types any unstructured object, even without apiVersion or kind, as the dynamic
// client has always accepted them in writes.
type anyTyper struct{ scheme *runtime.Scheme }

func (t anyTyper) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	kinds, unversioned, err := t.scheme.ObjectKinds(obj)
	if err == nil {
		return kinds, unversioned, nil
	}
	if _, ok := obj.(runtime.Unstructured); ok {
		return []schema.GroupVersionKind{obj.GetObjectKind().GroupVersionKind()}, false, nil
	}
	return nil, false, err
}

func (t anyTyper) Recognizes(schema.GroupVersionKind) bool { return true }
