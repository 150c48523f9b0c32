// Package gather writes a support bundle (tar.gz): the DR namespace's objects
// on the quorum cluster, the related objects and events on every workload
// cluster the CLI can reach, the logs of quorum-manager, pg-controller and the
// DRBD agents where the user may read them, the status and validate reports,
// and a README listing what is inside.
//
// No credential leaves the clusters: Secrets are written as their metadata
// and key names only, and every file passes through a redactor that replaces
// each Secret value it read (raw and base64) and the credentials of the
// clients it used, as well as anything that looks like a bearer token or a
// private key. Guest secrets go the same way: the inline cloud-init user and
// network data of every VM and VMI (also inside JSON annotations such as
// kubectl's last-applied-configuration) is replaced by the marker, its field
// names kept, and each value is replaced wherever else it appears. Secrets on
// the workload clusters (a VM's userDataSecretRef, sysprep or
// accessCredentials Secrets) are never read: the bundle shows their names only.
package gather
