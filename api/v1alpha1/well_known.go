package v1alpha1

// Names, labels and annotations shared by the hub, the agents, the DNS server and the
// people who read member clusters with kubectl.
const (
	// SystemNamespace is where Strait's own objects live in every member.
	SystemNamespace = "strait-system"

	// FieldManager is the server-side apply field manager of the hub.
	FieldManager = "strait-hub"

	// FieldManagerClusterSetIP is the server-side apply field manager that writes a
	// ServiceImport's spec.ips in a member (strait dns): the IP its member's API server
	// allocated to the import's derived Service. The hub never sets spec.ips, so the two
	// managers own disjoint fields and neither apply takes the other's away.
	FieldManagerClusterSetIP = "strait-clusterset-ip"

	// FieldManagerPrints is the server-side apply field manager that writes a
	// Membership's status.prints in a member (strait dns, dns/prints): the member's
	// count and fingerprint sum of the hub's objects per ClusterSet and kind. Every
	// strait dns replica applies under it the same values, so replicas converge instead
	// of each adding its own.
	FieldManagerPrints = "strait-dns-prints"

	// LabelServiceImport, on a Service the hub derives from a ClusterSetIP import (and on
	// its EndpointSlices' Service), names the ServiceImport in the same namespace whose
	// clusterset IP the Service's cluster IP is.
	LabelServiceImport = "strait.io/service-import"

	// LabelSourceCluster, on an EndpointSlice of a derived Service, names the cluster
	// whose endpoints it holds. It is not the MCS source-cluster label on purpose:
	// strait dns reads the slices that carry that one as per-cluster answers.
	LabelSourceCluster = "strait.io/source-cluster"

	// LabelClusterSet names the ClusterSet an object in a member was written for, as
	// "<namespace>.<name>" of the ClusterSet in the hub. The hub prunes by this label.
	LabelClusterSet = "strait.io/clusterset"

	// LabelManagedBy marks every object the hub writes into a member.
	LabelManagedBy = "app.kubernetes.io/managed-by"

	// ManagedByHub is the value of LabelManagedBy on objects written by the hub.
	ManagedByHub = "strait-hub"

	// LabelPeerCluster names the remote cluster a Peer is for.
	LabelPeerCluster = "strait.io/peer-cluster"

	// AnnotationDerivedFrom, on a Service the hub derives from a ClusterSetIP import,
	// says what it is for, so that nobody takes it for their own.
	AnnotationDerivedFrom = "strait.io/derived-from"

	// AnnotationDigest, on every object the hub writes into a member, is the digest
	// (16 hex digits) of the content the hub wrote, status included, but for the
	// target-cluster annotation (the member's own name): one object's digest is the
	// same in every member that holds it. A hub that starts over members already in
	// place (a restart, a new leader) has no record of its writes: an object whose
	// digest is the one it would write, and whose fields nobody else owns, is taken as
	// written instead of written again.
	AnnotationDigest = "strait.io/digest"

	// AnnotationTargetCluster names the member cluster an object is meant for in the
	// output of `strait render`.
	AnnotationTargetCluster = "strait.io/target-cluster"

	// MembershipName is the name of the one Membership in each member.
	MembershipName = "membership"

	// IPsecPSKSecretName is the Secret in each member's SystemNamespace that holds the
	// IPsec pre-shared key the hub copies there. It is the only name the hub may write
	// and the agent may read among the PSK Secrets: both roles name it.
	IPsecPSKSecretName = "strait-ipsec-psk"
)

// A Peer's status.state, as its cluster's active gateway reports the connection.
const (
	PeerConnected  = "Connected"
	PeerConnecting = "Connecting"
	PeerError      = "Error"
)

// Condition types used on Strait's objects beyond Flux's Ready/Reconciling/Stalled.
const (
	// ConditionConnected on a cluster in ClusterSet status: the hub reaches the member's
	// API server. On a Peer: the tunnel to that peer passes health checks.
	ConditionConnected = "Connected"
	// ConditionGatewayReady on a cluster in ClusterSet status: the member has an active
	// gateway.
	ConditionGatewayReady = "GatewayReady"
)

// Reasons for conditions.
const (
	ReasonValidationFailed   = "ValidationFailed"
	ReasonReconciliationOK   = "ReconciliationSucceeded"
	ReasonProgressing        = "Progressing"
	ReasonMembersUnreachable = "MembersUnreachable"
	ReasonApplyFailed        = "ApplyFailed"
	ReasonSuspended          = "Suspended"
	ReasonConnected          = "Connected"
	ReasonUnreachable        = "Unreachable"
	// ReasonBothBehindMasquerade: neither gateway of a pair can be dialed, so no cable
	// between them can come up.
	ReasonBothBehindMasquerade = "BothBehindMasquerade"
	ReasonNoActiveGateway      = "NoActiveGateway"
	ReasonGatewayActive        = "GatewayActive"
	ReasonGatewayLeaseLost     = "LeaseLost"
	ReasonPruning              = "Pruning"
	ReasonPruneFailed          = "PruneFailed"
	ReasonApplied              = "Applied"
)

// Finalizer is set on a ClusterSet by the hub so that deleting it first removes what the
// hub wrote into the members.
const Finalizer = "strait.io/cleanup"
