# CodeAct Sandbox credential forwarder: squid's parent for CONNECTs to hosts a credential is
# bound to. It runs in the sandbox's own proxy container as a user of its own, reads its bindings
# and their values from its standard input (never an argument, file or environment variable),
# makes a CA for this sandbox alone, signs one leaf for the bound hosts, destroys the CA's key,
# and then terminates the program's TLS, checks each request strictly, adds the credential,
# verifies the real server against the system's trust store, and masks the value in what comes
# back. It logs one line per request in squid's access-log format, naming the host, never a value.
import base64, ctypes, ipaddress, json, os, re, socket, ssl, subprocess, sys, threading, time, urllib.parse

PORT = 3129
LOG_TAG = 'codeact-net'
MAX_HEAD = 65536
MAX_LINE = 16384
# Each connection is a thread, and a thread is a task of the proxy container's 64: well below it,
# so that a program holding connections open meets this limit and never the container's.
MAX_CONNECTIONS = 32
IDLE_S = 300
TOKEN = re.compile(rb"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
METHOD = re.compile(rb'^[A-Z]{1,16}$')
VERSION = re.compile(rb'^HTTP/1\.[01]$')
CHUNK = re.compile(rb'^([0-9A-Fa-f]{1,16})(;[\x20-\x7e\t]*)?$')
HOST_FIELD = re.compile(r'^[a-z0-9.-]+(:443)?$')


class Refused(Exception):
    """A request the forwarder will not pass on; `why` goes to the log, `text` to the program."""

    def __init__(self, why, status, text):
        super().__init__(why)
        self.why, self.status, self.text = why, status, text


def log(method, host, status, bytes_in, bytes_out, why, server='-', sni='-'):
    # The fields of squid's format (accessLog.ts reads both); no value, path or header ever goes here.
    method = method if METHOD.match(method.encode()) else '-'
    line = f'{LOG_TAG} {time.time():.3f} 127.0.0.1 0 {method} {host} 443 {status} {bytes_in} {bytes_out} CREDENTIAL {why} - {server} {sni}\n'
    os.write(1, line.encode())


def not_dumpable():
    # No other process of this container's users may read this one's memory (squid runs as another).
    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except Exception:
        pass


def host_matches(pattern, host):
    return host.endswith(pattern[1:]) if pattern.startswith('*.') else host == pattern


def path_problem(path, params_refused):
    """Why `path` could name another path to a lenient server, or None: checked before prefixes are."""
    if '\\' in path or re.search(r'%2f|%5c|%2e|%25', path, re.I):
        return 'a path with an encoded slash, dot or percent sign'
    # Tomcat and Spring drop ";..." from a segment before they resolve dots ("/v1/..;/admin").
    if params_refused and ';' in path:
        return 'a path with a ";" parameter, on a host whose credential is limited to paths'
    try:
        decoded = urllib.parse.unquote_to_bytes(path).decode('utf-8', 'strict')
    except UnicodeDecodeError:
        return 'a path that is not UTF-8 once decoded (an overlong dot, say)'
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in decoded):
        return 'a path with a control character'
    # ".", "..", and what servers that trim dots and spaces read as one ("...", ".. ").
    if any(seg and not seg.strip(' .') for seg in decoded.split('/')):
        return 'a path with a dot segment'
    return None


def path_matches(prefixes, path):
    return not prefixes or any(path == p or path.startswith(p.rstrip('/') + '/') for p in prefixes)


def make_pki(run, hosts):
    """The CA (its key destroyed before this returns) and the leaf for `hosts`; returns the CA's PEM."""
    tag = os.urandom(6).hex()
    constraints = ','.join(f'permitted;DNS:{h[2:] if h.startswith("*.") else h}' for h in hosts)
    sans = ','.join(f'DNS:{h}' for h in hosts)
    key = lambda name: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', name]
    def openssl(*args):
        subprocess.run(['openssl', *args], cwd=run, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(run, 'leaf.ext'), 'w') as f:
        f.write(f'subjectAltName={sans}\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\nbasicConstraints=critical,CA:FALSE\n')
    try:
        openssl('req', '-x509', *key('ca.key'), '-out', 'ca.pem', '-days', '825', '-subj', f'/CN=CodeAct Sandbox credentials {tag}',
                '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0', '-addext', 'keyUsage=critical,keyCertSign',
                '-addext', f'nameConstraints=critical,{constraints}')
        openssl('req', *key('leaf.key'), '-out', 'leaf.csr', '-subj', f'/CN={hosts[0]}')
        openssl('x509', '-req', '-in', 'leaf.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-set_serial', f'0x{os.urandom(8).hex()}',
                '-days', '825', '-extfile', 'leaf.ext', '-out', 'leaf.pem')
    finally:
        # The CA's key: overwritten, then removed (a tmpfs: nothing reaches a disk). No later leaf
        # can be signed, by this process or by anyone who gets into this container.
        path = os.path.join(run, 'ca.key')
        if os.path.exists(path):
            with open(path, 'r+b') as f:
                f.write(b'\0' * os.fstat(f.fileno()).st_size)
            os.remove(path)
        for name in ('leaf.csr', 'leaf.ext'):
            if os.path.exists(os.path.join(run, name)):
                os.remove(os.path.join(run, name))
    with open(os.path.join(run, 'ca.pem')) as f:
        return f.read()


class Reader:
    """Buffered reads from a socket, bounded."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b''

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            return False
        self.buf += data
        return True

    def line(self, limit=MAX_LINE):
        while True:
            i = self.buf.find(b'\n')
            if i >= 0:
                line, self.buf = self.buf[:i + 1], self.buf[i + 1:]
                if not line.endswith(b'\r\n'):
                    raise Refused('malformed', 400, 'a header line ended without CRLF')
                return line[:-2]
            if len(self.buf) > limit:
                raise Refused('malformed', 431, 'a header line is too long')
            if not self.fill():
                return None

    def exactly(self, n):
        while len(self.buf) < n:
            if not self.fill():
                raise EOFError
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def some(self):
        if not self.buf and not self.fill():
            return b''
        out, self.buf = self.buf, b''
        return out


def read_head(reader):
    """(start line, [(name, value)]) or None at a clean end; Refused for anything ambiguous."""
    start = reader.line()
    while start == b'':  # RFC 9112: a server may skip empty lines before a request
        start = reader.line()
    if start is None:
        return None
    headers, size = [], len(start)
    while True:
        line = reader.line()
        if line is None:
            raise EOFError
        if line == b'':
            return start, headers
        size += len(line)
        if size > MAX_HEAD:
            raise Refused('malformed', 431, 'the request head is too large')
        if line[:1] in (b' ', b'\t'):
            raise Refused('malformed', 400, 'a folded header line')
        name, colon, value = line.partition(b':')
        if not colon or not TOKEN.match(name):
            raise Refused('malformed', 400, 'a header line that is not name: value')
        value = value.strip(b' \t')
        if any(c < 0x20 and c != 0x09 or c == 0x7f for c in value):
            raise Refused('malformed', 400, 'a control character in a header')
        headers.append((name.decode('ascii'), value.decode('latin-1')))


def framing(headers, request):
    """('length', n), ('chunked', None), or ('none'/'close', None); Refused when lengths conflict."""
    lengths = {v for k, v in headers if k.lower() == 'content-length'}
    codings = [v for k, v in headers if k.lower() == 'transfer-encoding']
    if codings:
        if lengths or len(codings) != 1 or codings[0].strip().lower() != 'chunked':
            raise Refused('malformed', 400, 'Transfer-Encoding with Content-Length, or other than chunked')
        return 'chunked', None
    if len(lengths) > 1 or any(not re.fullmatch(r'[0-9]{1,15}', v) for v in lengths):
        raise Refused('malformed', 400, 'conflicting or invalid Content-Length')
    if lengths:
        return 'length', int(lengths.pop())
    return ('none', None) if request else ('close', None)


class Masker:
    """Masks every redact text in a stream; holds back what could be the start of one."""

    def __init__(self, needles):
        self.needles = sorted({n for n in needles if n}, key=len, reverse=True)
        self.keep = max((len(n) for n in self.needles), default=1) - 1
        self.tail = b''

    def mask(self, data):
        for n in self.needles:
            data = data.replace(n, b'*' * len(n))
        return data

    def feed(self, data):
        data = self.mask(self.tail + data)
        if self.keep == 0:
            self.tail = b''
            return data
        cut = max(len(data) - self.keep, 0)
        out, self.tail = data[:cut], data[cut:]
        return out

    def flush(self):
        out, self.tail = self.tail, b''
        return out


class Forwarder:
    def __init__(self, config, leaf_dir):
        self.bindings = config['bindings']
        self.hosts = config.get('hosts') or {}
        self.never = [ipaddress.ip_network(r) for r in config['never']]
        self.reachable = [ipaddress.ip_network(r) for r in config.get('reachable') or []]
        self.upstream = ssl.create_default_context()
        if config.get('upstreamCa'):
            self.upstream.load_verify_locations(cadata=config['upstreamCa'])
        self.upstream.set_alpn_protocols(['http/1.1'])
        self.server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server.minimum_version = ssl.TLSVersion.TLSv1_2
        self.server.load_cert_chain(os.path.join(leaf_dir, 'leaf.pem'), os.path.join(leaf_dir, 'leaf.key'))
        self.server.set_alpn_protocols(['http/1.1'])
        self.server.sni_callback = remember_sni
        self.stand_ins = [b['standIn'] for b in self.bindings if b.get('standIn')]
        self.redact = [t.encode() for b in self.bindings for t in b['redact']]
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def bound(self, host):
        return any(host_matches(p, host) for b in self.bindings for p in b['hosts'])

    def binding_for(self, host, method, path):
        for b in self.bindings:
            if any(host_matches(p, host) for p in b['hosts']) and path_matches(b['paths'], path) and (not b['methods'] or method in b['methods']):
                return b
        return None

    def serve(self):
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(('127.0.0.1', PORT))
        listener.listen(128)
        return listener

    def limited(self, host):
        return any(b['paths'] for b in self.bindings if any(host_matches(p, host) for p in b['hosts']))

    def accept_forever(self, listener):
        # Nothing a connection does ends this loop: a forwarder that stopped would leave its bound
        # hosts unreachable for the sandbox's life (the gate ends the container if it does stop).
        while True:
            # A free slot first: beyond the limit, connections wait in the listen queue (squid's
            # connect succeeds and its CONNECT is answered once a slot frees) instead of being
            # closed, which squid would count against its parent until it took it for dead.
            self.slots.acquire()
            try:
                conn, _ = listener.accept()
            except OSError:
                self.slots.release()
                # Out of descriptors: they come back as connections end; a short pause, not a spin.
                time.sleep(0.05)
                continue
            try:
                threading.Thread(target=self.connection, args=(conn,), daemon=True).start()
            except RuntimeError:
                self.slots.release()
                conn.close()

    def connection(self, conn):
        try:
            conn.settimeout(IDLE_S)
            self.tunnel(conn)
        except Exception:
            pass
        finally:
            self.slots.release()
            try:
                conn.close()
            except OSError:
                pass

    def tunnel(self, conn):
        # squid's CONNECT for a bound host (only squid's user may connect here: the gate's firewall).
        head = read_head(Reader(conn))
        if head is None:
            return  # squid's probe of its parent
        parts = head[0].split(b' ')
        target = parts[1].decode('ascii', 'replace').lower() if len(parts) == 3 else ''
        host, _, port = target.rpartition(':')
        if parts[0] != b'CONNECT' or port != '443' or not self.bound(host):
            conn.sendall(b'HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n')
            return
        conn.sendall(b'HTTP/1.1 200 Connection established\r\n\r\n')
        try:
            client = self.server.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError):
            log('CONNECT', host, 0, 0, 0, 'handshake')
            return
        # The hello must name the host squid let through (or none): the leaf is for bound hosts only.
        sni = getattr(client, 'codeact_sni', None)
        if sni is not None and sni.lower() != host:
            log('CONNECT', host, 0, 0, 0, 'sni')
            return
        Session(self, client, host).run()


class Session:
    """One TLS connection from the program to a bound host, request after request."""

    def __init__(self, forwarder, client, host):
        self.f, self.client, self.host = forwarder, client, host
        self.reader = Reader(client)
        self.upstream = None
        self.up_reader = None
        self.server_address = '-'

    def run(self):
        try:
            while True:
                try:
                    head = read_head(self.reader)
                except Refused as r:
                    self.refuse(r, '-')
                    return
                if head is None:
                    return
                if not self.request(head):
                    return
        except (EOFError, OSError, ssl.SSLError):
            return
        finally:
            if self.upstream:
                self.upstream.close()

    def refuse(self, r, method):
        body = f'CodeAct Sandbox proxy: refused, {r.text}.\n'.encode()
        log(method, self.host, r.status, len(body), 0, r.why)
        self.client.sendall(b'HTTP/1.1 %d Refused\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n' % (r.status, len(body)) + body)

    def request(self, head):
        start, headers = head
        parts = start.split(b' ')
        method = parts[0].decode('ascii', 'replace') if parts else '-'
        try:
            target, keep = self.check(parts, headers)
            binding = self.f.binding_for(self.host, method, target.split('?', 1)[0])
            out_headers, target = self.rewrite(binding, headers, target)
            kind, length = framing(headers, True)
        except Refused as r:
            self.refuse(r, method)
            return False
        try:
            self.connect()
        except Refused as r:
            self.refuse(r, method)
            return False
        # A client waiting to be told to send its body is told so here: the body goes on at once.
        expect = any(k.lower() == 'expect' for k, v in out_headers)
        out_headers = [(k, v) for k, v in out_headers if k.lower() != 'expect']
        lines = [f'{method} {target} {parts[2].decode()}'.encode()] + [f'{k}: {v}'.encode('latin-1') for k, v in out_headers]
        sent = self.upstream_send(b'\r\n'.join(lines) + b'\r\n\r\n')
        if expect and kind != 'none':
            self.client.sendall(b'HTTP/1.1 100 Continue\r\n\r\n')
        sent += self.relay_body(self.reader, self.upstream.sendall, kind, length, None)
        got, status, up_keep = self.response(method)
        log(method, self.host, status, got, sent, 'credential' if binding else 'bound', self.server_address)
        return keep and up_keep

    def check(self, parts, headers):
        if len(parts) != 3 or not METHOD.match(parts[0]) or not VERSION.match(parts[2]) or parts[0] == b'CONNECT':
            raise Refused('malformed', 400, 'not a request line this proxy passes on')
        target = parts[1].decode('ascii', 'strict') if all(0x21 <= c < 0x7f for c in parts[1]) else None
        if target is None:
            raise Refused('malformed', 400, 'a request target with spaces or control characters')
        if target.lower().startswith('https://'):
            authority, _, rest = target[8:].partition('/')
            if authority.lower() not in (self.host, f'{self.host}:443'):
                raise Refused('malformed', 421, 'a request for another host inside this connection')
            target = '/' + rest
        if not target.startswith('/'):
            raise Refused('malformed', 400, 'a request target that is not a path')
        problem = path_problem(target.split('?', 1)[0], self.f.limited(self.host))
        if problem:
            raise Refused('malformed', 400, problem)
        hosts = [v for k, v in headers if k.lower() == 'host']
        if len(hosts) != 1:
            raise Refused('malformed', 400, 'none or more than one Host header')
        if not HOST_FIELD.match(hosts[0].lower()) or hosts[0].lower().split(':')[0] != self.host:
            raise Refused('malformed', 421, 'a Host header for another host')
        if any(k.lower() == 'upgrade' for k, v in headers):
            raise Refused('upgrade', 501, 'a protocol upgrade, which this proxy does not pass on to a host with a credential')
        close = parts[2] == b'HTTP/1.0' or any(k.lower() == 'connection' and 'close' in v.lower() for k, v in headers)
        return target, not close

    def rewrite(self, binding, headers, target):
        used = binding.get('standIn') if binding else None
        # A stand-in anywhere but where its own binding swaps it: refused, and recorded.
        for s in self.f.stand_ins:
            names = [k for k, v in headers if s in v]
            if s in target or (names and (s != used or any(k.lower() != (binding['header'][0].lower() if binding.get('header') else '') for k in names))):
                if not (binding and binding.get('query') and s == used and s in target and not names):
                    raise Refused('standin', 403, 'a stand-in sent where its credential is not bound')
        if not binding:
            return headers, target
        out = headers
        if binding.get('header'):
            name, value = binding['header']
            out = [(k, v) for k, v in out if k.lower() != name.lower()] + [(name, value)]
        if binding.get('query'):
            name, value = binding['query']
            path, _, query = target.partition('?')
            kept = [p for p in query.split('&') if p and p.split('=', 1)[0] != name]
            # The value comes encoded (wire.ts), as its masks expect to see it echoed.
            target = path + '?' + '&'.join(kept + [f'{name}={value}'])
        # The value may come back in a response: asked for unencoded, so it can be masked there.
        out = [(k, v) for k, v in out if k.lower() != 'accept-encoding'] + [('Accept-Encoding', 'identity')]
        return out, target

    def connect(self):
        if self.upstream is not None:
            return
        addresses = [self.f.hosts[self.host]] if self.host in self.f.hosts else sorted({a[4][0] for a in socket.getaddrinfo(self.host, 443, socket.AF_INET, socket.SOCK_STREAM)})
        last = None
        for address in addresses:
            ip = ipaddress.ip_address(address)
            if any(ip in r for r in self.f.never) and not any(ip in r for r in self.f.reachable):
                last = Refused('private', 403, 'the host resolves to a private or loopback address')
                continue
            try:
                raw = socket.create_connection((address, 443), timeout=15)
            except OSError:
                last = Refused('upstream', 502, 'the host could not be reached')
                continue
            try:
                self.upstream = self.f.upstream.wrap_socket(raw, server_hostname=self.host)
            except (ssl.SSLError, OSError):
                raw.close()
                raise Refused('upstream', 502, "the host's certificate could not be verified against the system's trust store")
            self.upstream.settimeout(IDLE_S)
            self.up_reader = Reader(self.upstream)
            self.server_address = address
            return
        raise last or Refused('upstream', 502, 'the host has no address')

    def upstream_send(self, data):
        self.upstream.sendall(data)
        return len(data)

    def relay_body(self, reader, send, kind, length, masker):
        """Copies one body from `reader` to `send` as framed; returns the bytes sent."""
        total = 0
        def out(data):
            nonlocal total
            total += len(data)
            send(data)
        if kind == 'length':
            left = length
            while left:
                chunk = reader.exactly(min(left, 65536))
                left -= len(chunk)
                out(masker.feed(chunk) if masker else chunk)
            if masker:
                out(masker.flush())
        elif kind == 'chunked':
            while True:
                size_line = reader.line()
                m = CHUNK.match(size_line or b'')
                if not m:
                    raise EOFError
                size = int(m.group(1), 16)
                if size == 0:
                    if masker and masker.tail:
                        rest = masker.flush()
                        out(b'%x\r\n' % len(rest) + rest + b'\r\n')
                    out(b'0\r\n')
                    seen = 0
                    while True:
                        trailer = reader.line()
                        if trailer is None:
                            raise EOFError
                        seen += len(trailer)
                        if seen > MAX_HEAD:
                            raise EOFError
                        # A request's trailers are dropped: they would reach the bound host unchecked.
                        if masker or trailer == b'':
                            out((masker.mask(trailer) if masker else trailer) + b'\r\n')
                        if trailer == b'':
                            return total
                # Passed on in pieces as they come: a chunk's declared size is never held whole.
                left = size
                while left:
                    data = reader.exactly(min(left, 65536))
                    left -= len(data)
                    data = masker.feed(data) if masker else data
                    if data:
                        out(b'%x\r\n' % len(data) + data + b'\r\n')
                if reader.exactly(2) != b'\r\n':
                    raise EOFError
        elif kind == 'close':
            while True:
                data = reader.some()
                if not data:
                    if masker:
                        out(masker.flush())
                    return total
                out(masker.feed(data) if masker else data)
        return total

    def response(self, method):
        """Relays the response (1xx first); returns bytes sent to the program, the status, and whether the connection goes on."""
        total = 0
        while True:
            head = read_head(self.up_reader)
            if head is None:
                raise EOFError
            start, headers = head
            m = re.match(rb'^HTTP/1\.([01]) ([0-9]{3})( .*)?$', start)
            if not m:
                raise EOFError
            status = int(m.group(2))
            masker = Masker(self.f.redact)
            block = b'\r\n'.join([start] + [f'{k}: {v}'.encode('latin-1') for k, v in headers]) + b'\r\n\r\n'
            block = masker.mask(block)
            self.client.sendall(block)
            total += len(block)
            if 100 <= status < 200:
                continue
            try:
                kind, length = framing(headers, False)
            except Refused:
                raise EOFError
            if method == 'HEAD' or status in (204, 304):
                kind, length = 'none', None
            encoded = any(k.lower() == 'content-encoding' and v.strip().lower() not in ('', 'identity') for k, v in headers)
            total += self.relay_body(self.up_reader, self.client.sendall, kind, length, None if encoded else masker)
            close = m.group(1) == b'0' or kind == 'close' or any(k.lower() == 'connection' and 'close' in v.lower() for k, v in headers)
            if close:
                self.upstream.close()
                self.upstream = None
            return total, status, not (kind == 'close')


def remember_sni(sock, name, context):
    sock.codeact_sni = name


def main():
    run = sys.argv[1]
    # One line of its own, base64: an engine may put its attach request's body before it (Podman does).
    lines = [l for l in sys.stdin.buffer.read().split(b'\n') if l.startswith(b'codeact-credentials ')]
    config = json.loads(base64.b64decode(lines[-1][len(b'codeact-credentials '):]).decode('utf-8'))
    del lines
    os.close(0)
    not_dumpable()
    os.umask(0o077)
    own = os.path.join(run, f'forwarder-{os.urandom(4).hex()}')
    os.mkdir(own, 0o700)
    hosts = sorted({h for b in config['bindings'] for h in b['hosts']})
    ca = make_pki(own, hosts)
    forwarder = Forwarder(config, own)
    del config
    listener = forwarder.serve()
    sys.stderr.write(f'codeact-credentials ca {base64.b64encode(ca.encode()).decode()}\n')
    sys.stderr.flush()
    forwarder.accept_forever(listener)


if __name__ == '__main__':
    try:
        main()
    except Exception as e:
        # The class only: a message could quote what it failed on.
        sys.stderr.write(f'codeact-credentials: stopped ({type(e).__name__})\n')
        sys.exit(1)
