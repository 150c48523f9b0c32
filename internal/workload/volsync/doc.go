// Package volsync holds what the VolSync controllers of the workload tier share:
// the labels on the objects they create, the names of the VolSync objects of a
// consistency group, and the Service and clusterset names of a destination.
// The group's source half is package rgs, its destination half package rgd.
package volsync
