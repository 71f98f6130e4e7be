// Package render is the `strait render` command: it reads a ClusterSet file and the
// observed member objects from disk, runs plan.Compute and prints plan.Render's output.
// The computation is plan's; this package only reads files and prints, and talks to no
// cluster.
package render
