package hubtest

import (
	"crypto/sha1"
	"encoding/hex"
)

func sha1Hex(prefix string, body []byte) string {
	h := sha1.New()
	h.Write([]byte(prefix))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}
