package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/straitnet/strait/lab/flannel"
)

func main() {
	skel.PluginMainFuncs(skel.CNIFuncs{Add: add, Del: del, Check: check}, version.All,
		"CNI plugin flannel (the strait lab's, for flannel "+flannel.Version+")")
}

func add(args *skel.CmdArgs) error {
	n, err := flannel.ParseNetConf(args.StdinData)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(n.SubnetFile)
	if err != nil {
		return fmt.Errorf("%w (is flanneld running on this node?)", err)
	}
	env, err := flannel.ParseSubnetEnv(data)
	if err != nil {
		return fmt.Errorf("%s: %w", n.SubnetFile, err)
	}
	d, err := flannel.Delegate(n, env)
	if err != nil {
		return err
	}
	conf, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(n.DataDir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(scratch(n, args.ContainerID), conf, 0o600); err != nil {
		return err
	}
	result, err := invoke.DelegateAdd(context.Background(), d["type"].(string), conf, nil)
	if err != nil {
		return fmt.Errorf("delegate %s ADD: %w", d["type"], err)
	}
	return result.Print()
}

func del(args *skel.CmdArgs) error {
	n, err := flannel.ParseNetConf(args.StdinData)
	if err != nil {
		return err
	}
	conf, plugin, err := saved(n, args.ContainerID)
	if errors.Is(err, os.ErrNotExist) {
		return nil // never added, or deleted already: DEL must succeed
	}
	if err != nil {
		return err
	}
	if err := invoke.DelegateDel(context.Background(), plugin, conf, nil); err != nil {
		return fmt.Errorf("delegate %s DEL: %w", plugin, err)
	}
	return os.Remove(scratch(n, args.ContainerID))
}

func check(args *skel.CmdArgs) error {
	n, err := flannel.ParseNetConf(args.StdinData)
	if err != nil {
		return err
	}
	conf, plugin, err := saved(n, args.ContainerID)
	if err != nil {
		return fmt.Errorf("no configuration saved by ADD: %w", err)
	}
	var stdin struct {
		PrevResult json.RawMessage `json:"prevResult"`
	}
	if err := json.Unmarshal(args.StdinData, &stdin); err != nil {
		return err
	}
	var d map[string]any
	if err := json.Unmarshal(conf, &d); err != nil {
		return err
	}
	if stdin.PrevResult != nil {
		d["prevResult"] = stdin.PrevResult
	}
	if conf, err = json.Marshal(d); err != nil {
		return err
	}
	return invoke.DelegateCheck(context.Background(), plugin, conf, nil)
}

// scratch is where ADD saves a container's delegate configuration.
func scratch(n flannel.NetConf, containerID string) string {
	return filepath.Join(n.DataDir, containerID)
}

// saved reads the delegate configuration ADD saved and its plugin's name.
func saved(n flannel.NetConf, containerID string) ([]byte, string, error) {
	conf, err := os.ReadFile(scratch(n, containerID))
	if err != nil {
		return nil, "", err
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(conf, &head); err != nil {
		return nil, "", fmt.Errorf("%s: not a delegate configuration: %w", scratch(n, containerID), err)
	}
	if head.Type == "" {
		return nil, "", fmt.Errorf("%s: not a delegate configuration: no type", scratch(n, containerID))
	}
	return conf, head.Type, nil
}
