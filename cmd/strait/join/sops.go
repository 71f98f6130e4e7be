package join

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/armor"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The SOPS file format (version 3), as Flux's kustomize-controller decrypts it: every
// value under a key matching encrypted_regex is AES-256-GCM encrypted under a random
// data key, with its path ("stringData:value:") as additional data and a 32-byte nonce;
// the data key is encrypted to each age recipient (an armored age file); the MAC is the
// SHA-512 of every value of the document in order, upper-case hex, encrypted under the
// data key with lastmodified as additional data.
const (
	sopsVersion        = "3.9.0"
	sopsEncryptedRegex = "^(data|stringData)$"
	sopsNonceSize      = 32
)

// SOPSSecret is an Opaque Secret with one key in stringData, SOPS-encrypted to an age
// recipient: what `strait join --sops` writes for the clusterset repo. random supplies
// the data key and the nonces (crypto/rand in use; a test's fixed reader makes the
// values reproducible — the age stanza stays random).
func SOPSSecret(namespace, name, key, value, recipient string, now time.Time, random io.Reader) ([]byte, error) {
	r, err := age.ParseX25519Recipient(recipient)
	if err != nil {
		return nil, fmt.Errorf("--sops %q: not an age recipient (age1…): %w", recipient, err)
	}
	if random == nil {
		random = rand.Reader
	}
	dataKey := make([]byte, 32)
	if _, err := io.ReadFull(random, dataKey); err != nil {
		return nil, err
	}
	enc := func(plain, additional string) (string, error) {
		block, err := aes.NewCipher(dataKey)
		if err != nil {
			return "", err
		}
		gcm, err := cipher.NewGCMWithNonceSize(block, sopsNonceSize)
		if err != nil {
			return "", err
		}
		iv := make([]byte, sopsNonceSize)
		if _, err := io.ReadFull(random, iv); err != nil {
			return "", err
		}
		out := gcm.Seal(nil, iv, []byte(plain), []byte(additional))
		tag := len(out) - gcm.Overhead()
		return fmt.Sprintf("ENC[AES256_GCM,data:%s,iv:%s,tag:%s,type:str]", base64.StdEncoding.EncodeToString(out[:tag]),
			base64.StdEncoding.EncodeToString(iv), base64.StdEncoding.EncodeToString(out[tag:])), nil
	}
	// The document in the order sops walks it; the MAC hashes every value, encrypted or not.
	mac := sha512.New()
	for _, v := range []string{"v1", "Secret", name, namespace, "Opaque", value} {
		mac.Write([]byte(v))
	}
	encValue, err := enc(value, "stringData:"+key+":")
	if err != nil {
		return nil, err
	}
	modified := now.UTC().Truncate(time.Second).Format(time.RFC3339)
	encMAC, err := enc(fmt.Sprintf("%X", mac.Sum(nil)), modified)
	if err != nil {
		return nil, err
	}
	var armored bytes.Buffer
	aw := armor.NewWriter(&armored)
	w, err := age.Encrypt(aw, r)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(dataKey); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if err := aw.Close(); err != nil {
		return nil, err
	}
	str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: s} }
	mapping := func(kv ...*yaml.Node) *yaml.Node {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap, Content: kv}
	}
	encBlock := str(strings.TrimRight(armored.String(), "\n") + "\n")
	encBlock.Style = yaml.LiteralStyle
	doc := mapping(
		str("apiVersion"), str("v1"),
		str("kind"), str("Secret"),
		str("metadata"), mapping(str("name"), str(name), str("namespace"), str(namespace)),
		str("type"), str("Opaque"),
		str("stringData"), mapping(str(key), str(encValue)),
		str("sops"), mapping(
			str("age"), &yaml.Node{Kind: yaml.SequenceNode, Tag: yaml.NodeTagSeq, Content: []*yaml.Node{
				mapping(str("recipient"), str(recipient), str("enc"), encBlock)}},
			str("lastmodified"), str(modified),
			str("mac"), str(encMAC),
			str("encrypted_regex"), str(sopsEncryptedRegex),
			str("version"), str(sopsVersion),
		),
	)
	out, err := yaml.NewRNode(doc).String()
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}
