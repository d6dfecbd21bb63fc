package scanner

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/calricon/driftscan/classify"
	"github.com/calricon/driftscan/render"
	"github.com/calricon/driftscan/report"
)

// SOPS-encrypted objects (config.DecryptionSOPS), as kustomize-controller
// decrypts them before it applies them (internal/decryptor's
// DecryptResource, v1.9.6):
//
//   - an object with a sops.mac (sops encrypted it as a file, values only:
//     keys, and values its --encrypted-regex or --unencrypted-suffix left
//     alone, are plain) is decrypted whole and applied without its sops
//     metadata;
//   - a Secret without one has each data value that is itself a SOPS file
//     (a secretGenerator's file) decrypted;
//   - an object annotated kustomize.toolkit.fluxcd.io/decrypt: disabled is
//     applied as Git holds it.
//
// driftscan never holds the key. Each encrypted value is replaced in Git's
// object by a sealed marker, a hash of its ciphertext (so a new ciphertext
// is a new value to a pending sync), and compared by who wrote it live:
// the applier that decrypts it, or someone else (compareObject). A marker
// is never shown: mask hides whatever holds one.

// sealedPrefix starts every sealed marker.
const sealedPrefix = "driftscan:sops-encrypted:"

// sealedPrefix64 starts the base64 of every sealed marker (a Secret's
// data): the base64 of the prefix's first 24 bytes, which no later byte
// changes.
var sealedPrefix64 = base64.StdEncoding.EncodeToString([]byte(sealedPrefix[:24]))

// sopsValue is a value sops encrypted (sops' aes.encryptedValueRegex).
var sopsValue = regexp.MustCompile(`^ENC\[AES256_GCM,data:(.*),iv:(.+),tag:(.+),type:(.+)\]$`)

// sopsCiphertext starts every value sops encrypted: a finding whose Git
// value holds one is masked in every app, decrypted or not.
const sopsCiphertext = "ENC[AES256_GCM,data:"

// sopsFileMarks are the bytes that show a Secret's data value is a SOPS
// file, in each of its formats (kustomize-controller's
// sopsFormatToMarkerBytes).
var sopsFileMarks = [][]byte{[]byte(`"mac": "ENC[`), []byte("sops_mac=ENC["), []byte("[sops]"), []byte("mac: ENC[")}

// decryptDisabled is the annotation that keeps kustomize-controller from
// decrypting an object.
const decryptDisabled = "kustomize.toolkit.fluxcd.io/decrypt"

// sealSOPS replaces each value SOPS encrypted in obj by a sealed marker and
// removes obj's sops metadata, as kustomize-controller decrypts it. It
// says whether obj is a Secret whose data came from SOPS-encrypted files
// (a secretGenerator's files or env files): kustomize-controller decrypts
// those before the build, so a hash suffix on the Secret's name is the
// hash of values driftscan cannot know.
func sealSOPS(obj *unstructured.Unstructured) (fromFiles bool) {
	if strings.EqualFold(obj.GetAnnotations()[decryptDisabled], "disabled") {
		return false
	}
	secret := obj.GetKind() == "Secret" && obj.GetAPIVersion() == "v1"
	if md, ok := obj.Object["sops"].(map[string]any); ok && md["mac"] != nil && md["mac"] != "" {
		delete(obj.Object, "sops")
		for k, v := range obj.Object {
			obj.Object[k] = sealValues(v, secret && k == "data")
		}
		return false
	}
	if !secret {
		return false
	}
	data, _ := obj.Object["data"].(map[string]any)
	// An env file sops encrypted gives one entry a line: its values
	// encrypted, its metadata in sops_* entries.
	dotenv := sopsValue.Match(decoded(data["sops_mac"]))
	for k, v := range data {
		plain := decoded(v)
		switch {
		case dotenv && strings.HasPrefix(k, "sops_"):
			delete(data, k)
		case dotenv && sopsValue.Match(plain):
			data[k] = sealed(string(plain), true)
		case isSOPSFile(plain):
			data[k] = sealed(string(plain), true)
		default:
			continue
		}
		fromFiles = true
	}
	return fromFiles
}

// decoded is the base64 value v decoded, nil when it is none.
func decoded(v any) []byte {
	s, _ := v.(string)
	plain, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil // kustomize-controller leaves it to the apply to refuse
	}
	return plain
}

// isSOPSFile says whether a Secret's data value is a file sops encrypted.
func isSOPSFile(plain []byte) bool {
	for _, m := range sopsFileMarks {
		if bytes.Contains(plain, m) {
			return true
		}
	}
	return false
}

// hashSuffix is the suffix kustomize gives a generated object's name: a
// hyphen and ten characters of its content's hash, encoded without vowels
// (sigs.k8s.io/kustomize/api/hasher's encode).
var hashSuffix = regexp.MustCompile(`-[2456789bcdfghkmt]{10}$`)

// sealedNameSuffix ends the marker of a name kustomize gave a Secret it
// generated from SOPS-encrypted files: <name>-<sops-hash>. No object's name
// holds "<", so no real name is one.
const sealedNameSuffix = "-<sops-hash>"

// sealGeneratedNames replaces, in every object of one render but the
// Secrets themselves, each string that is the hash-suffixed name of a
// Secret generated from SOPS-encrypted files (fromFiles) by its marker:
// kustomize names such a Secret by a hash of its decrypted values, and
// rewrites the references to it (a Pod template's secretRef, a volume's
// secretName) to that name, which only the key reveals.
func sealGeneratedNames(mfs []render.Manifest, fromFiles map[*unstructured.Unstructured]bool) {
	names := map[string]string{}
	for _, mf := range mfs {
		if n := mf.Object.GetName(); fromFiles[mf.Object] && hashSuffix.MatchString(n) {
			names[n] = n[:len(n)-11] + sealedNameSuffix
		}
	}
	if len(names) == 0 {
		return
	}
	for _, mf := range mfs {
		if !fromFiles[mf.Object] {
			replaceStrings(mf.Object.Object, func(s string) (string, bool) {
				m, ok := names[s]
				return m, ok
			})
		}
	}
}

// generatedNameOf says whether live is git but for the names of Secrets
// generated from SOPS-encrypted files: where git holds a name's marker,
// live holds a name kustomize may have given that Secret (its base name
// and a hash suffix). A list or map (an atomic envFrom) is compared
// element by element.
func generatedNameOf(git, live any) bool {
	switch g := git.(type) {
	case string:
		l, ok := live.(string)
		base, sealed := strings.CutSuffix(g, sealedNameSuffix)
		return ok && sealed && strings.HasPrefix(l, base) && len(l) == len(base)+11 && hashSuffix.MatchString(l)
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok || len(l) != len(g) {
			return false
		}
		named := false
		for k, e := range g {
			switch le, ok := l[k]; {
			case !ok:
				return false
			case generatedNameOf(e, le):
				named = true
			case !reflect.DeepEqual(e, le):
				return false
			}
		}
		return named
	case []any:
		l, ok := live.([]any)
		if !ok || len(l) != len(g) {
			return false
		}
		named := false
		for i := range g {
			switch {
			case generatedNameOf(g[i], l[i]):
				named = true
			case !reflect.DeepEqual(g[i], l[i]):
				return false
			}
		}
		return named
	}
	return false
}

// sealValues replaces each encrypted value in v by its marker, base64'd
// when in64 (a Secret's data, whose decrypted values are base64).
func sealValues(v any, in64 bool) any {
	return replaceStrings(v, func(s string) (string, bool) {
		if sopsValue.MatchString(s) {
			return sealed(s, in64), true
		}
		return "", false
	})
}

// replaceStrings replaces, in place, each string in v for which with says
// so by what it returns, and returns v (a string replaced itself).
func replaceStrings(v any, with func(string) (string, bool)) any {
	switch v := v.(type) {
	case string:
		if r, ok := with(v); ok {
			return r
		}
	case map[string]any:
		for k, e := range v {
			v[k] = replaceStrings(e, with)
		}
	case []any:
		for i, e := range v {
			v[i] = replaceStrings(e, with)
		}
	}
	return v
}

// sealed is the marker that stands for ciphertext.
func sealed(ciphertext string, in64 bool) string {
	sum := sha256.Sum256([]byte(ciphertext))
	m := sealedPrefix + hex.EncodeToString(sum[:6])
	if in64 {
		return base64.StdEncoding.EncodeToString([]byte(m))
	}
	return m
}

// isSealed says whether v is a sealed marker.
func isSealed(v any) bool {
	s, ok := v.(string)
	return ok && (strings.HasPrefix(s, sealedPrefix) || strings.HasPrefix(s, sealedPrefix64))
}

// holdsSealedValue says whether v is, or holds, a sealed marker.
func holdsSealedValue(v any) bool { return holds(v, isSealed) }

// holdsSealedName says whether v is, or holds, the marker of a generated
// Secret's name.
func holdsSealedName(v any) bool {
	return holds(v, func(v any) bool {
		s, ok := v.(string)
		return ok && strings.HasSuffix(s, sealedNameSuffix)
	})
}

// holds says whether v is, or holds, a scalar that is.
func holds(v any, is func(any) bool) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			if holds(e, is) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if holds(e, is) {
				return true
			}
		}
	default:
		return is(v)
	}
	return false
}

// holdsSealed says whether a value's text holds a sealed marker anywhere.
func holdsSealed(text string) bool {
	return strings.Contains(text, sealedPrefix) || strings.Contains(text, sealedPrefix64)
}

// decryptedByApplier says why a change is no drift when Git holds it
// sealed and manager, the applier that decrypts it, wrote it live: the
// value (or the generated Secret's name) Git holds, as far as anyone
// without the key can tell; "" when it is not such a change.
func decryptedByApplier(ch change, manager string) string {
	switch {
	case generatedNameOf(ch.Git, ch.Live):
		return fmt.Sprintf("names a Secret generated from SOPS-encrypted files, whose hash suffix is of values only the key reveals; %s, which decrypts them, wrote the live name", manager)
	case ch.GitPresent && isSealed(ch.Git) && ch.LivePresent:
		return fmt.Sprintf("encrypted with SOPS in Git; %s, which decrypts it, wrote the live value", manager)
	}
	return ""
}

// sealedHint says how a finding on a value encrypted in Git (or a name of
// a Secret generated from encrypted files) was found; "" for another.
func sealedHint(ch change, owner *classify.Entry) string {
	switch {
	case !ch.GitPresent:
		return ""
	case !holdsSealedValue(ch.Git):
		if holdsSealedName(ch.Git) {
			return "Git names a Secret generated from SOPS-encrypted files, whose hash suffix only the key reveals: a live name of that Secret written by the applier that decrypts them is no drift"
		}
		return ""
	case ch.Type == report.TypeRemoved || !ch.LivePresent:
		return "Git holds this value encrypted with SOPS; live has none"
	case owner == nil:
		return "Git holds this value encrypted with SOPS, so driftscan compares it by who wrote it live: no manager is on record as its writer"
	}
	return fmt.Sprintf("Git holds this value encrypted with SOPS, so driftscan compares it by who wrote it live: %s, not the applier that decrypts it", owner.Manager)
}
