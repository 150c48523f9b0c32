// Package storage is a test fixture that plays a CSI provisioner and the kubelet's
// block-volume staging for clusters that have neither: it binds every pending PVC
// that names a StorageClass to a new PersistentVolume (for a WaitForFirstConsumer
// class only once kube-scheduler selected a node for a pod using it, and then
// with node affinity to that node), and, for block volumes,
// publishes a device link in a kubelet folder so that the drbd-node-agent can
// resolve the PVC to a device. Product code never imports it.
package storage
