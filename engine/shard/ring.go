package shard

import (
	"hash/fnv"
	"slices"
	"sort"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Key names a parent on the ring: its kind and its cache key (namespace/name, or name when
// cluster-scoped). No controller is part of it, so that every controller of a parent runs on
// one member, and a child's member follows from its ControllerRef alone.
func Key(kind schema.GroupKind, objectKey string) string {
	return kind.String() + "|" + objectKey
}

// Tokens is how many virtual nodes each member places on the ring: enough that three
// members' shares stay within a few percent of a third.
const Tokens = 100

// Ring assigns keys to members by consistent hashing. Each member places Tokens virtual nodes
// on a 64-bit circle, at Hash(member + "#" + i); a key belongs to the member of the first node
// at or after Hash(key), wrapping around. A member joining so takes keys only from the ranges
// its nodes split, and one leaving gives away only its own keys: the others keep theirs.
//
// A Ring is immutable and safe for concurrent use. The empty ring owns nothing.
type Ring struct {
	members []string // sorted
	nodes   []node   // sorted by position
}

type node struct {
	at     uint64
	member string
}

// NewRing returns the ring of the given members (duplicates count once).
func NewRing(members []string) *Ring {
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	r := &Ring{members: ms, nodes: make([]node, 0, len(ms)*Tokens)}
	for _, m := range ms {
		for i := range Tokens {
			r.nodes = append(r.nodes, node{at: Hash(m + "#" + strconv.Itoa(i)), member: m})
		}
	}
	sort.Slice(r.nodes, func(i, j int) bool {
		if r.nodes[i].at != r.nodes[j].at {
			return r.nodes[i].at < r.nodes[j].at
		}
		return r.nodes[i].member < r.nodes[j].member // equal positions: any fixed order
	})
	return r
}

// Members returns the ring's members, sorted. The slice must not be modified.
func (r *Ring) Members() []string { return r.members }

// Owner returns the member key belongs to; "" on the empty ring.
func (r *Ring) Owner(key string) string {
	if len(r.nodes) == 0 {
		return ""
	}
	h := Hash(key)
	i := sort.Search(len(r.nodes), func(i int) bool { return r.nodes[i].at >= h })
	if i == len(r.nodes) {
		i = 0
	}
	return r.nodes[i].member
}

// Share returns the fraction of the circle, and so of keys in expectation, member owns.
func (r *Ring) Share(member string) float64 {
	if len(r.nodes) == 0 {
		return 0
	}
	var owned uint64 // arc lengths modulo 2^64: the arc ending at node i starts after node i-1
	for i, n := range r.nodes {
		if n.member != member {
			continue
		}
		prev := r.nodes[(i+len(r.nodes)-1)%len(r.nodes)].at
		owned += n.at - prev
	}
	if len(r.members) == 1 && r.members[0] == member {
		return 1 // the whole circle, which its arcs' sum wraps to 0
	}
	return float64(owned) / (1 << 64)
}

// Hash places s on the circle: 64-bit FNV-1a, then a finalizing mix (MurmurHash3's fmix64),
// since FNV-1a alone barely moves the high bits for the last bytes, and names that differ in
// their last characters ("engine#1", "engine#2") would crowd one arc.
func Hash(s string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(s))
	h := f.Sum64()
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
