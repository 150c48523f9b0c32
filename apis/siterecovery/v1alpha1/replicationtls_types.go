package v1alpha1

// ReplicationTLSMode says whether DRBD encrypts a zone's replication link.
// +kubebuilder:validation:Enum=Disabled;Required
type ReplicationTLSMode string

// Replication TLS modes.
const (
	// ReplicationTLSDisabled: DRBD sends replication traffic as plain TCP.
	ReplicationTLSDisabled ReplicationTLSMode = "Disabled"
	// ReplicationTLSRequired: DRBD's TLS (kernel TLS, the handshake done by
	// tlshd on each node). A node whose DRBD cannot do it holds the replica
	// unconnected; it never falls back to plain text.
	ReplicationTLSRequired ReplicationTLSMode = "Required"
)

// ReasonReplicationTLSUnsupported is the reason of a replica whose zone
// requires TLS on the replication link while its node's DRBD kernel module
// or drbd-utils cannot do it. The drbd-node-agent sets it on the
// DRBDResource's Configured condition, and quorum-manager copies the
// agent's message to the ProtectionRequest.
const ReasonReplicationTLSUnsupported = "ReplicationTLSUnsupported"

// DRBDReplicationTLS is DRBD's TLS for the replication link (the net options
// tls, tls-keyring, tls-privkey and tls-certificate). The key material stays
// on the nodes: the optional names below are key descriptions in the kernel
// keyring of each node, which DRBD hands to the handshake daemon; unset,
// tlshd uses the certificate and key of its own configuration.
// +kubebuilder:validation:XValidation:rule="self.mode == 'Required' || (!has(self.keyring) && !has(self.privateKey) && !has(self.certificate))",message="keyring, privateKey and certificate need mode Required"
// +kubebuilder:validation:XValidation:rule="has(self.privateKey) == has(self.certificate)",message="set privateKey and certificate together, or neither (tlshd then uses its configured ones)"
type DRBDReplicationTLS struct {
	// mode is Disabled (default) or Required.
	// +optional
	// +kubebuilder:default=Disabled
	Mode ReplicationTLSMode `json:"mode,omitempty"`
	// keyring is the description of the kernel keyring that holds the TLS
	// key material on each node (DRBD's tls-keyring); DRBD shares it with
	// tlshd.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:-]*$`
	Keyring string `json:"keyring,omitempty"`
	// privateKey is the description of the key, in the node's kernel
	// keyring, holding the node's DER-encoded private key (DRBD's
	// tls-privkey).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:-]*$`
	PrivateKey string `json:"privateKey,omitempty"`
	// certificate is the description of the key, in the node's kernel
	// keyring, holding the node's DER-encoded certificate (DRBD's
	// tls-certificate).
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:-]*$`
	Certificate string `json:"certificate,omitempty"`
}

// Required reports whether t asks for TLS.
func (t *DRBDReplicationTLS) Required() bool {
	return t != nil && t.Mode == ReplicationTLSRequired
}

// ZoneDRBDSettings are the DRBD options of every replica of a zone.
type ZoneDRBDSettings struct {
	// tls encrypts the replication link with DRBD's kernel TLS. It applies to
	// replicas created after it is set; a protected VM keeps the setting it
	// was protected with until it is protected again.
	// +optional
	TLS *DRBDReplicationTLS `json:"tls,omitempty"`
}
