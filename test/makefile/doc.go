// Package makefile tests the Makefile's conventions: `make help` lists every
// target of the Makefile and of the files it includes (hack/make/*.mk), each
// with the description its `## ` comment gives, so that a newcomer finds every
// entry point in one place and a target added without a description fails.
package makefile
