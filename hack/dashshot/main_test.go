package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestThePictureIsTheDashboard: the picture in docs/images is the monitoring
// component's dashboard drawn from the recording beside it, byte for byte: a dashboard
// changed since (a panel, a query, a title, the layout) fails until the picture is made
// again (make dashboard-picture, from a lab's Prometheus; a query the recording does not
// hold fails the replay itself).
func TestThePictureIsTheDashboard(t *testing.T) {
	root := filepath.Join("..", "..")
	d, err := readDashboard(filepath.Join(root, "kustomize", "components", "monitoring", "dashboards", "strait-clusterset.json"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := readRecording(filepath.Join(root, "docs", "images", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := drawRecording(&got, d, rec); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(root, "docs", "images", "dashboard.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("docs/images/dashboard.svg is not the dashboard drawn from docs/images/dashboard.json: make dashboard-picture PROMETHEUS=URL (a lab's hub Prometheus), or make dashboard-picture to draw it again from the recording")
	}
}
