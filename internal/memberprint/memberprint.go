package memberprint

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	straitv1 "github.com/straitnet/strait/api/v1alpha1"
)

// Print is a kind's count of objects and the sum of their fingerprints (modulo 2^64).
type Print struct {
	N   int
	Sum uint64
}

// Add counts the object with fingerprint fp in; Remove takes it out.
func (p *Print) Add(fp uint64) { p.N++; p.Sum += fp }

// Remove takes out an object counted in with Add.
func (p *Print) Remove(fp uint64) { p.N--; p.Sum -= fp }

// Reported says whether the print of kind comes from the member's report (the
// Membership's status.prints) rather than from the hub's own watch: the kinds of
// which a member holds one or more objects per import, members × exports in all, and
// its Peers, one per other member (members² in all).
func Reported(kind string) bool {
	return kind == "ServiceImport" || kind == "Service" || kind == "EndpointSlice" || kind == "Peer"
}

// ReportedKinds are the kinds Reported says yes to, in a fixed order.
func ReportedKinds() []string { return []string{"EndpointSlice", "Peer", "Service", "ServiceImport"} }

// StatusByOthers says whether others write the status subresource of a kind the hub
// writes: the active gateway's agent writes every Peer's status at each health round
// (latency, loss, counters), the member's daemons the Membership's. A status write
// bumps the resourceVersion but not the generation, and it changes nothing the hub
// wrote, so such a kind is fingerprinted by generation, labels and annotations.
func StatusByOthers(kind string) bool { return kind == "Peer" || kind == "Membership" }

// Digested says whether a kind is fingerprinted by the digest the hub wrote on the
// object (straitv1.AnnotationDigest) and the managers other than Strait's own that own
// its fields, rather than by its resourceVersion: ServiceImports and the Services and
// EndpointSlices derived from them. Strait's own writers in the member change them
// after the hub (strait dns sets a ClusterSetIP import's spec.ips), which moves the
// resourceVersion but not what the hub wrote: by the resourceVersion each new
// ClusterSetIP import read as someone else's change in every member importing it, and
// the hub passed over all of them in full.
func Digested(kind string) bool {
	return kind == "ServiceImport" || kind == "Service" || kind == "EndpointSlice"
}

// ownManager says whether a field manager is Strait's in a member: the hub's, and the
// writer of the clusterset IPs in strait dns.
func ownManager(manager string) bool {
	return manager == straitv1.FieldManager || manager == straitv1.FieldManagerClusterSetIP
}

// OthersHash hashes who besides Strait owns fields of o outside its status, and when
// each last changed them: the manager, operation and time of each of its managed
// fields entries not of a subresource, in order. A new hand in the object (kubectl
// edit, someone's apply), or a later change by one already there (its entry's time
// moves, to the second, when it changes a field or takes one over from the hub),
// changes it; a write by Strait's own managers, or to the status, does not.
func OthersHash(o client.Object) uint64 {
	var others []string
	for _, e := range o.GetManagedFields() {
		if e.Subresource == "" && !ownManager(e.Manager) {
			var at int64
			if e.Time != nil {
				at = e.Time.Unix()
			}
			others = append(others, e.Manager+"\x00"+string(e.Operation)+"\x00"+strconv.FormatInt(at, 10))
		}
	}
	slices.Sort(others)
	h := uint64(HashOffset)
	for _, m := range slices.Compact(others) {
		h = HashString(h, m)
	}
	return h
}

// DigestPrint is the fingerprint of an object of a Digested kind: its kind, its name's
// key (NameKey of its namespace and name), the digest the hub wrote on it (ParseDigest)
// and the hash of the other managers (OthersHash). It is of numbers, so that the hub
// computes the print of what it wrote from its record alone: the name's key and the
// digest, 16 bytes an object (NoOthers when nobody else owns a field).
func DigestPrint(kind string, name, digest, others uint64) uint64 {
	h := Mix64(HashString(HashOffset, kind) ^ Mix64(name))
	h = Mix64(h ^ digest)
	return Mix64(h ^ Mix64(others))
}

// NoOthers is OthersHash of an object whose fields only Strait's managers own.
const NoOthers uint64 = HashOffset

// FormatDigest is the value of the digest annotation for an object whose content hashes
// to hash; ParseDigest reads it back.
func FormatDigest(hash uint64) string { return fmt.Sprintf("%016x", hash) }

// ParseDigest is the value of a digest annotation as the hash it was formatted from
// (16 hexadecimal digits). Any other value, someone else's, is hashed: it counts as a
// digest the hub did not write (but for a 64-bit collision), and so does none.
func ParseDigest(s string) uint64 {
	if len(s) == 16 {
		if v, err := strconv.ParseUint(s, 16, 64); err == nil {
			return v
		}
	}
	return Mix64(HashString(HashOffset, s) ^ 0x5bd1e9955bd1e995)
}

// Of is the fingerprint of a member's object of kind as the member holds it.
func Of(kind string, o client.Object) uint64 {
	if Digested(kind) {
		return DigestPrint(kind, NameKey(o.GetNamespace(), o.GetName()),
			ParseDigest(o.GetAnnotations()[straitv1.AnnotationDigest]), OthersHash(o))
	}
	var meta uint64
	if StatusByOthers(kind) {
		meta = MetaHash(o)
	}
	return Fingerprint(kind, o.GetNamespace(), o.GetName(), o.GetGeneration(), meta, o.GetResourceVersion())
}

// Fingerprint hashes an object's identity and version: its resourceVersion, or, for
// kinds whose status others write, its generation with its labels and annotations
// (meta, MetaHash).
func Fingerprint(kind, namespace, name string, gen int64, meta uint64, rv string) uint64 {
	h := HashString(HashString(HashString(HashOffset, kind), namespace), name)
	if StatusByOthers(kind) && gen != 0 {
		h = Mix64(h ^ Mix64(uint64(gen)^meta))
	} else {
		h = HashString(h, rv)
	}
	return Mix64(h)
}

// MetaHash hashes an object's labels and annotations, in key order.
func MetaHash(o client.Object) uint64 {
	h := uint64(HashOffset)
	for _, m := range []map[string]string{o.GetLabels(), o.GetAnnotations()} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			h = HashString(HashString(h, k), m[k])
		}
		h = HashString(h, "") // ends the map
	}
	return h
}

// Counted says which ClusterSet's print a member's object counts in: the value of its
// strait.io/clusterset label when the hub wrote it (app.kubernetes.io/managed-by:
// strait-hub); ok is false for anyone else's object.
func Counted(o client.Object) (clusterSet string, ok bool) {
	l := o.GetLabels()
	if l[straitv1.LabelManagedBy] != straitv1.ManagedByHub || l[straitv1.LabelClusterSet] == "" {
		return "", false
	}
	return l[straitv1.LabelClusterSet], true
}

// FormatSum is a sum as status.prints writes it: 16 hexadecimal digits.
func FormatSum(sum uint64) string { return fmt.Sprintf("%016x", sum) }

// ParseSum reads a sum written by FormatSum.
func ParseSum(s string) (uint64, error) {
	if len(s) != 16 {
		return 0, fmt.Errorf("sum %q: want 16 hexadecimal digits", s)
	}
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("sum %q: want 16 hexadecimal digits", s)
	}
	return v, nil
}

// FromStatus is the print of kind for the ClusterSet labelled clusterSet as a
// Membership's status.prints reports it; ok is false when it reports none (no reporter
// runs in the member, or it has not yet synced) or an unreadable one. A ClusterSet of
// which the member holds nothing of kind is reported with a count of 0.
func FromStatus(prints []straitv1.MemberPrint, clusterSet, kind string) (Print, bool) {
	for _, p := range prints {
		if p.ClusterSet != clusterSet || p.Kind != kind {
			continue
		}
		sum, err := ParseSum(p.Sum)
		if err != nil || p.Count < 0 {
			return Print{}, false
		}
		return Print{N: int(p.Count), Sum: sum}, true
	}
	return Print{}, false
}

// KeyOfDeleted is the NameKey of an object an informer or reflector hands to a
// delete: the object, or a DeletedFinalStateUnknown from a relist that missed the
// delete, whose key is namespace/name whatever its Obj holds. ok is false for anything
// else.
func KeyOfDeleted(obj any) (key uint64, ok bool) {
	switch o := obj.(type) {
	case client.Object:
		return NameKey(o.GetNamespace(), o.GetName()), true
	case toolscache.DeletedFinalStateUnknown:
		ns, name, err := toolscache.SplitMetaNamespaceKey(o.Key)
		if err != nil {
			return 0, false
		}
		return NameKey(ns, name), true
	}
	return 0, false
}

// NameKey is the 64-bit key of an object by its namespace and name, for maps of
// millions of objects where strings as keys would cost more than the values.
func NameKey(ns, name string) uint64 { return HashString(HashString(HashOffset, ns), name) }

// HashOffset starts a HashString chain (FNV-1a's offset basis).
const HashOffset = 14695981039346656037

const hashPrime = 1099511628211

// HashString is FNV-1a over s and a 0 separator, without allocating.
func HashString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= hashPrime
	}
	return h * hashPrime // the separator: h ^= 0, then the multiply
}

// Mix64 is SplitMix64's finalizer: fingerprints are summed, so their bits must be
// spread evenly.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
