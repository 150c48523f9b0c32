// Package virtapi is a test fixture that plays KubeVirt's virt-api for the
// freeze and unfreeze subresources of VirtualMachineInstances, behind the
// boundary the real one sits behind: an APIService (apiregistration.k8s.io/v1)
// for v1.subresources.kubevirt.io on a test API server (test/harness turns on
// the aggregation layer), whose Service points at an HTTPS server in the test
// process. Product code reaches it only through the API server, as it would
// reach KubeVirt. It is never product code.
//
// A caller the API server does not authorize (a SubjectAccessReview of the
// user its front proxy names) is Forbidden. A freeze or unfreeze of a VMI that
// does not exist is NotFound, of one that is not Running is Conflict "VM is
// not running"; a freeze without unfreezeTimeout, or of a guest whose agent
// does not answer, is an internal error carrying the guest agent's refusal,
// as virt-api reports what virt-handler refused. A freeze freezes the guest of
// test/sim/guest (its writes wait until the thaw), sets the VMI's
// status.fsFreezeStatus to "frozen", and thaws the guest by itself after
// unfreezeTimeout; an unfreeze thaws it and clears the field.
package virtapi
