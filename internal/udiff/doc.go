// Package udiff prints the unified diff of two texts, as diff -u does: strait diff's
// objects and strait export's ClusterSet file. Pure: no I/O.
package udiff
