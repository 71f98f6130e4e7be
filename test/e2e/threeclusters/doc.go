// Package threeclusters holds the end-to-end tests that need a third cluster: a
// consumer (c3) of a service that two other clusters (c1, c2) export, where neither
// export is local and strait dns answers round-robin.
package threeclusters
