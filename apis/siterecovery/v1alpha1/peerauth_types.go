package v1alpha1

// PeerAuthAlgorithm is DRBD's cram-hmac-alg: the kernel digest whose HMAC,
// keyed with the shared secret, answers the peer's challenge when a
// replication connection is established.
// +kubebuilder:validation:Enum=sha256;sha512
type PeerAuthAlgorithm string

// Peer authentication algorithms.
const (
	PeerAuthSHA256 PeerAuthAlgorithm = "sha256"
	PeerAuthSHA512 PeerAuthAlgorithm = "sha512"
)

// DRBDPeerAuthentication makes DRBD peers prove that they hold the same
// shared secret (challenge-response with cram-hmac-alg) before a
// replication connection is accepted, instead of trusting a peer by its
// address.
//
// Where the secret lives: in a Secret of the namespace
// PeerAuthNamespace(<DR namespace>) on the same workload cluster, where the
// DR namespace is the DRBDResource's siterecovery.trilio.io/dr-namespace
// label. The namespace is derived, never taken from the spec, so a
// DRBDResource cannot point the agent at another DR namespace's secrets.
// Why a namespace of its own: RBAC cannot narrow `get secrets` by label or
// by a name pattern, so whoever may read one Secret of a namespace may read
// them all. In the application namespace the agent would need Secret reads
// in every namespace (the VMs' own credentials included); in the DR
// namespace it could read quorum-manager's ServiceAccount token and the
// VolSync keys. The peer-auth namespace holds these Secrets only: the
// workload chart grants the drbd-node-agent `get` there and nothing else
// on Secrets, and each DR namespace's quorum identity writes only its own
// peer-auth namespace, so neither a node nor another DR namespace's
// identity reads or replaces another zone's secrets.
type DRBDPeerAuthentication struct {
	// secretRef names the Secret in the peer-auth namespace; its key
	// "shared-secret" is DRBD's shared-secret (at most 63 bytes).
	// +required
	SecretRef LocalObjectReference `json:"secretRef"`
	// algorithm is DRBD's cram-hmac-alg (default sha256).
	// +optional
	// +kubebuilder:default=sha256
	Algorithm PeerAuthAlgorithm `json:"algorithm,omitempty"`
	// revision names the version of the secret the replica must use: the
	// agent applies the Secret only when its
	// siterecovery.trilio.io/peer-auth-revision annotation carries this
	// value, so a rotation reaches both replicas as one step. It is an
	// opaque random token, not derived from the secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Revision string `json:"revision"`
}

// PeerAuthStatus is what a ProtectionRequest's peer-auth Secrets and
// DRBDResources were last found to hold, never the secret itself.
type PeerAuthStatus struct {
	// revision of the shared secret both sides' Secrets and DRBDResources
	// hold (DRBDPeerAuthentication.revision).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Revision string `json:"revision,omitempty"`
	// rotatedFor is the value of the request's
	// siterecovery.trilio.io/rotate-peer-secret annotation that revision was
	// made for: another value asks for a rotation.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	RotatedFor string `json:"rotatedFor,omitempty"`
}

// Names shared by quorum-manager (which writes the peer-auth Secrets) and the
// drbd-node-agent (which reads them).
const (
	// PeerAuthSecretKey is the Secret key holding DRBD's shared-secret.
	PeerAuthSecretKey = "shared-secret"
	// PeerAuthRevisionAnnotation on a peer-auth Secret is the revision of its
	// value (DRBDPeerAuthentication.revision).
	PeerAuthRevisionAnnotation = "siterecovery.trilio.io/peer-auth-revision"
	// PeerAuthRotatedAnnotation on a peer-auth Secret is the value of the
	// ProtectionRequest's RotatePeerSecretAnnotation that the secret was
	// generated for.
	PeerAuthRotatedAnnotation = "siterecovery.trilio.io/peer-auth-rotated-for"
	// RotatePeerSecretAnnotation on a ProtectionRequest asks quorum-manager to
	// replace the DRBD shared secret of its replicas: any new value rotates
	// once.
	RotatePeerSecretAnnotation = "siterecovery.trilio.io/rotate-peer-secret"
	// peerAuthNamespaceSuffix makes the peer-auth namespace of a DR namespace.
	peerAuthNamespaceSuffix = "-drbd-auth"
)

// PeerAuthNamespace is the namespace, on each workload cluster, of the DRBD
// peer-auth Secrets of the replicas of DR namespace drNamespace (the workload
// chart creates it for each quorumAccess.drNamespaces entry).
func PeerAuthNamespace(drNamespace string) string { return drNamespace + peerAuthNamespaceSuffix }
