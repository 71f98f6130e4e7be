package flux

import (
	"fmt"

	"github.com/straitnet/strait/lab/image"
)

// nonRoot is the user Flux's own images run as (USER 65534:65534): the Deployments say
// runAsNonRoot without a runAsUser, so the image's user must be a number other than 0.
const nonRoot = "65534:65534"

// ImageSpec is the image of controller: the static binary (built by make flux-binaries)
// as /<controller> over the lab's base files (/etc/passwd with nobody, /tmp). Flux's own
// images add CA certificates and, for kustomize-controller, tini, git and gpg; the lab
// fetches over plain HTTP from its own git server and decrypts nothing, so none is needed.
func (r Release) ImageSpec(controller string, binary []byte) (image.Spec, error) {
	if _, ok := r.Sources[controller]; !ok {
		return image.Spec{}, fmt.Errorf("flux %s: %q is not one of its controllers %v", r.Version, controller, Controllers())
	}
	if len(binary) == 0 {
		return image.Spec{}, fmt.Errorf("flux %s image of %s: empty binary", r.Version, controller)
	}
	bin := image.Files{}
	if err := bin.Add(image.File(controller, 0o755, binary)); err != nil {
		return image.Spec{}, err
	}
	return image.Spec{
		Ref:        r.Image(controller),
		Layers:     []image.Files{image.BaseFiles(), bin},
		Entrypoint: []string{"/" + controller},
		User:       nonRoot,
		Labels: map[string]string{
			"org.opencontainers.image.title":   controller,
			"org.opencontainers.image.version": r.Version,
			"org.opencontainers.image.source":  ModulePath(controller),
		},
	}, nil
}
