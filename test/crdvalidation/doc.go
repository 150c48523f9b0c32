// Package crdvalidation holds the tests that create every siterecovery CRD's
// valid and invalid examples in a real kube-apiserver, so that the OpenAPI
// bounds, enums and CEL rules are proven to reject bad input with a message that
// tells the user what to fix.
package crdvalidation
