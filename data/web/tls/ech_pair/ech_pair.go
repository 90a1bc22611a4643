// ech_pair: a TLS 1.3 server and client of Go's crypto/tls with Encrypted Client Hello
// (draft-ietf-tls-esni), for data/web/tls/make_ech.sh. Nothing here is from another project.
//
//	ech_pair cert CERT KEY                     a self-signed P-256 certificate for www.example.com
//	                                           and public.example.com
//	ech_pair keys KEYS LIST                    an X25519 ECH key: KEYS (private key and ECHConfig, hex)
//	                                           and the ECHConfigList a client is given (LIST)
//	ech_pair server KEYS CERT KEY ADDR SITE    HTTPS (HTTP/2 or 1.1) of the files of SITE, ECH on
//	ech_pair client LIST CA FROM KEYLOG PATH...  GET https://www.example.com/PATH over one
//	                                           connection from address FROM, ECH required; prints
//	                                           path, status, body bytes, protocol, ECH accepted
//	ech_pair server3 KEYS CERT KEY ADDR SITE   the same over HTTP/3 (quic-go, QUIC v1)
//	ech_pair client3 LIST CA KEYLOG PATH...    the same over HTTP/3
package main

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"

	"github.com/quic-go/quic-go/http3"
	"os"
	"strings"
	"time"
)

func u16(b []byte, v int) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }

// echConfig: one ECHConfig (draft-ietf-tls-esni §4): version 0xfe0d, then its contents.
func echConfig(pub []byte, publicName string) []byte {
	var c []byte
	c = append(c, 1)     // config_id
	c = u16(c, 0x0020)   // kem_id: DHKEM(X25519, HKDF-SHA256)
	c = u16(c, len(pub)) // public_key
	c = append(c, pub...)
	c = u16(c, 4)      // cipher_suites
	c = u16(c, 0x0001) // kdf_id: HKDF-SHA256
	c = u16(c, 0x0001) // aead_id: AES-128-GCM
	c = append(c, 32)  // maximum_name_length
	c = append(c, byte(len(publicName)))
	c = append(c, publicName...)
	c = u16(c, 0) // extensions
	out := u16(nil, 0xfe0d)
	out = u16(out, len(c))
	return append(out, c...)
}

func main() {
	switch os.Args[1] {
	case "keys": // keys PRIVHEX_FILE LIST_FILE
		k, _ := ecdh.X25519().GenerateKey(rand.Reader)
		cfg := echConfig(k.PublicKey().Bytes(), "public.example.com")
		list := u16(nil, len(cfg))
		list = append(list, cfg...)
		os.WriteFile(os.Args[2], []byte(hex.EncodeToString(k.Bytes())+"\n"+hex.EncodeToString(cfg)), 0o600)
		os.WriteFile(os.Args[3], list, 0o644)
	case "server": // server KEYS_FILE CERT KEY ADDR SITE
		srv := &http.Server{Addr: os.Args[5], Handler: http.FileServer(http.Dir(os.Args[6])), TLSConfig: serverTLS()}
		fmt.Println("serving")
		panic(srv.ListenAndServeTLS("", ""))
	case "client": // client LIST_FILE CA FROM KEYLOG PATH...
		dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(os.Args[4])}}
		fetch(&http.Transport{ForceAttemptHTTP2: true, DialContext: dialer.DialContext, TLSClientConfig: clientTLS(os.Args[5])},
			os.Args[6:])
	case "server3": // server3 KEYS CERT KEY ADDR SITE  (HTTP/3 over QUIC, quic-go)
		srv := &http3.Server{Addr: os.Args[5], Handler: http.FileServer(http.Dir(os.Args[6])),
			TLSConfig: http3.ConfigureTLSConfig(serverTLS())}
		fmt.Println("serving")
		panic(srv.ListenAndServe())
	case "client3": // client3 LIST CA KEYLOG PATH...
		fetch(&http3.Transport{TLSClientConfig: clientTLS(os.Args[4])}, os.Args[5:])
	case "cert": // cert CERT KEY
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "www.example.com"},
			DNSNames: []string{"www.example.com", "public.example.com"}, NotBefore: time.Now().Add(-time.Hour),
			NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign}
		der, _ := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
		kd, _ := x509.MarshalECPrivateKey(k)
		os.WriteFile(os.Args[2], pemEncode("CERTIFICATE", der), 0o644)
		os.WriteFile(os.Args[3], pemEncode("EC PRIVATE KEY", kd), 0o600)
	}
}

func pemEncode(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// serverTLS: the certificate (os.Args[3], [4]) and the ECH key (os.Args[2], as "keys" wrote it).
func serverTLS() *tls.Config {
	raw, _ := os.ReadFile(os.Args[2])
	parts := strings.Split(strings.TrimSpace(string(raw)), "\n")
	priv, _ := hex.DecodeString(parts[0])
	cfg, _ := hex.DecodeString(parts[1])
	cert, err := tls.LoadX509KeyPair(os.Args[3], os.Args[4])
	if err != nil {
		panic(err)
	}
	return &tls.Config{
		Certificates:             []tls.Certificate{cert},
		EncryptedClientHelloKeys: []tls.EncryptedClientHelloKey{{Config: cfg, PrivateKey: priv, SendAsRetry: true}},
		MinVersion:               tls.VersionTLS13,
	}
}

// clientTLS: ECH with the ECHConfigList (os.Args[2]), the CA (os.Args[3]), the key log at keylog.
func clientTLS(keylog string) *tls.Config {
	list, _ := os.ReadFile(os.Args[2])
	pem, _ := os.ReadFile(os.Args[3])
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	kl, _ := os.OpenFile(keylog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	return &tls.Config{ServerName: "www.example.com", RootCAs: pool, KeyLogWriter: kl,
		EncryptedClientHelloConfigList: list, MinVersion: tls.VersionTLS13}
}

// fetch: GET each path over the transport; one line each: path, status, body bytes, protocol,
// ECH accepted.
func fetch(tr http.RoundTripper, paths []string) {
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for _, p := range paths {
		resp, err := client.Get("https://www.example.com" + p)
		if err != nil {
			panic(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Printf("%s\t%d\t%d\t%s\t%v\n", p, resp.StatusCode, n, resp.Proto, resp.TLS != nil && resp.TLS.ECHAccepted)
	}
}
