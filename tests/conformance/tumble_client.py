"""tumble_client.py: a tumble.v1 client codec written from proto/PROTOCOL.md alone.

A second implementation in another language, to hold the spec (not the C or
JS code) to its word: client messages both ways (§4), server messages (§5, §6),
snapshot state with keyframes and deltas (§7), errors as protocol codes (§8).
Python 3 with Debian's python3-msgpack; nothing of the repository's codecs.
"""
import math
import struct

import msgpack

# §8 error codes
ERR = {
    'malformed': 1, 'bad_message': 2, 'unknown_type': 3, 'bad_version': 4, 'not_joined': 5,
    'already_joined': 6, 'bad_room': 7, 'room_full': 8, 'too_many_rooms': 9, 'bad_value': 10,
    'unknown_param': 11, 'unknown_body': 12, 'rate_limited': 13, 'too_big': 14, 'projectile_cap': 15,
    'not_allowed': 16, 'bad_snapshot': 17, 'shutting_down': 18, 'internal': 19, 'text_frame': 20,
    'watch_only': 21,
}

# §4: client message types and their fields after [type]
CLIENT = {
    'hello': (1, ['version', 'room', 'kind', 'scene', 'name', 'watch', 'kbps']),
    'throw': (2, ['seq', 'origin', 'velocity', 'shape', 'view_tick']),
    'poke': (3, ['seq', 'body', 'point', 'impulse', 'view_tick']),
    'grab_start': (4, ['seq', 'pointer', 'point', 'body', 'view_tick']),
    'grab_move': (5, ['seq', 'pointer', 'point']),
    'grab_end': (6, ['seq', 'pointer']),
    'param': (7, ['seq', 'name', 'value']),
    'action': (8, ['seq', 'action', 'scene']),
    'contacts_view': (9, ['seq', 'on']),
    'ping': (10, ['client_time', 'ack_tick', 'rtt_ms', 'recv_bytes']),
    'resync': (11, []),
    'lobby_req': (12, []),
}
CLIENT_BY_TYPE = {t: (name, fields) for name, (t, fields) in CLIENT.items()}
# §2: optional fields at the end of a message may be left out
TRAILING_OPTIONAL = {'grab_start': 2, 'action': 1, 'ping': 3, 'hello': 2, 'poke': 1, 'throw': 1}
# §13: a ping carries its link report (all three fields) or none of it
REPORT_FIELDS = ('ack_tick', 'rtt_ms', 'recv_bytes')

SERVER = {32: 'welcome', 33: 'snap_key', 34: 'snap_delta', 35: 'contacts', 36: 'dice', 37: 'param_changed',
          38: 'peer_joined', 39: 'peer_left', 40: 'reset', 41: 'scene', 42: 'pong', 43: 'error', 44: 'lobby',
          45: 'watchers'}

POS_SCALE = 2048  # §7.2 rigid bodies
VERT_SCALE = 1024  # §7.2 mesh vertices
INV_SQRT2 = 1 / math.sqrt(2)


class ProtoError(Exception):
    def __init__(self, code, text):
        super().__init__(f'{code} {text}')
        self.code = code


def fail(name, text):
    raise ProtoError(ERR[name], text)


def f32(x):
    """x rounded to float32 (and widened back)."""
    return struct.unpack('<f', struct.pack('<f', x))[0]


# ---- encoding (§2: integral values that fit a safe integer as msgpack integers, the rest float64)

def _num_form(v):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        return [_num_form(x) for x in v]
    if isinstance(v, float) and v.is_integer() and abs(v) <= 2 ** 53 - 1:
        return int(v)
    return v


def encode_client(msg):
    """{type: 'throw', seq: 1, ...} -> bytes; every field written, nil where absent."""
    t, fields = CLIENT[msg['type']]
    if msg['type'] == 'ping' and not any(f in msg for f in REPORT_FIELDS):
        fields = fields[:1]  # §13: a ping without a report stays [10, t]
    if msg['type'] == 'hello':
        # "Watchers": only a watcher's hello has the 7th field; "Bandwidth budgets": kbps the 8th, when asked for
        fields = fields[:7] if msg.get('kbps') else fields[:6] if msg.get('watch') else fields[:5]
    if msg['type'] in ('throw', 'poke', 'grab_start') and msg.get('view_tick') is None:
        fields = fields[:4]  # "Lag compensation": view_tick written only when given
    out = [t] + [_num_form(msg.get(f)) for f in fields]
    return msgpack.packb(out, use_bin_type=True)


def unpack(data):
    """One msgpack value, exactly (§2); anything else is malformed."""
    try:
        n = len(data)  # no header may promise more than the frame holds
        return msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True, ext_hook=_no_ext,
                               max_str_len=n, max_bin_len=n, max_array_len=n, max_map_len=n)
    except ProtoError:
        raise
    except Exception as e:  # truncated, trailing bytes, bad UTF-8, reserved bytes, absurd counts
        fail('malformed', f'not one msgpack value: {e}')


def _no_ext(code, data):
    fail('malformed', 'ext type')


def _uint(v, maximum, what):
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        fail('bad_message', f'{what}: expected unsigned integer')
    if v > maximum:
        fail('bad_value', f'{what}: {v} above {maximum}')
    return v


def _opt_uint(v, maximum, what):
    return None if v is None else _uint(v, maximum, what)


def _num(v, absmax, what):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        fail('bad_message', f'{what}: expected a number')
    if not math.isfinite(v) or abs(v) > absmax:
        fail('bad_value', f'{what}: {v} not finite or above {absmax}')
    return v


def _str(v, what, maximum=32):
    if not isinstance(v, str):
        fail('bad_message', f'{what}: expected a string')
    if len(v.encode()) > maximum:
        fail('bad_value', f'{what}: too long')
    return v


def _opt_str(v, what):
    return None if v is None else _str(v, what)


def _list(v, minimum, what):
    if not isinstance(v, list):
        fail('bad_message', f'{what}: expected an array')
    if len(v) < minimum:
        fail('bad_message', f'{what}: {len(v)} elements, need {minimum}')
    return v


def _bin(v, what):
    if not isinstance(v, (bytes, bytearray)):
        fail('bad_message', f'{what}: expected bin')
    return bytes(v)


def _vec(v, n, absmax, what):
    _list(v, n, what)
    if len(v) != n:
        fail('bad_message', f'{what}: expected {n} numbers')
    return [_num(x, absmax, what) for x in v]


def decode_client(data):
    """Client frame -> dict (the fields of §4 by name), for the vectors."""
    v = unpack(data)
    if not isinstance(v, list) or not v:
        fail('bad_message', 'message must be an array [type, ...]')
    if v[0] not in CLIENT_BY_TYPE:
        fail('unknown_type', f'type {v[0]!r}')
    name, fields = CLIENT_BY_TYPE[v[0]]
    need = len(fields) + 1 - TRAILING_OPTIONAL.get(name, 0)
    _list(v, need, name)
    out = {'type': name}
    for i, f in enumerate(fields):
        out[f] = v[i + 1] if i + 1 < len(v) else None
    if name == 'hello' and out['watch'] is not None and not isinstance(out['watch'], bool):
        fail('bad_message', 'hello.watch: expected a bool')
    if name == 'hello' and out['kbps'] is not None:
        if _uint(out['kbps'], 2 ** 32 - 1, 'hello.kbps') < 16 or out['kbps'] > 1000000:
            fail('bad_value', f"hello.kbps: {out['kbps']} kbit/s outside 16..1000000")
    if name in ('throw', 'poke', 'grab_start') and out['view_tick'] is not None:
        _uint(out['view_tick'], 2 ** 32 - 1, 'view_tick')
    return out


# ---- server messages (§5, §6)

def _u16s(b):
    return list(struct.unpack(f'<{len(b) // 2}H', b))


def _static(m):
    if not isinstance(m, dict):
        fail('bad_message', 'static: expected a map')
    b = _list(m.get('bounds'), 6, 'static.bounds')
    st = {'bounds': {'min': b[0:3], 'max': b[3:6]}, 'planes': [], 'capsules': [], 'boxes': [], 'meshes': []}
    for p in m.get('planes', []):
        st['planes'].append({'normal': p[0:3], 'offset': p[3]})
    for c in m.get('capsules', []):
        st['capsules'].append({'body': c[0], 'a': c[1:4], 'b': c[4:7], 'radius': c[7], 'color': c[8]})
    for x in m.get('boxes', []):
        st['boxes'].append({'center': x[0:3], 'half': x[3:6], 'rot': x[6:10], 'color': x[10], 'material': x[11]})
    for me in m.get('meshes', []):
        tris, pins = _bin(me[2], 'mesh.tris'), _bin(me[3], 'mesh.pins')
        if len(tris) % 6 or len(pins) % 2:
            fail('bad_message', 'mesh: tris/pins not whole records')
        verts = _uint(me[1], 16384, 'mesh.verts')
        idx = _u16s(tris) + _u16s(pins)
        if any(i >= verts for i in idx):
            fail('bad_value', 'mesh: index out of range')
        st['meshes'].append({'kind': me[0], 'verts': verts, 'tris': _u16s(tris), 'pins': _u16s(pins),
                             'color': me[4], 'grid_w': me[5], 'grid_h': me[6]})
    return st


def _params(v):
    return [{'name': p[0], 'value': p[1], 'min': p[2], 'max': p[3], 'default': p[4], 'step': p[5]} for p in v]


def decode_server(data):
    """Server frame -> dict; snapshots keep their raw fields for SnapshotState."""
    v = unpack(data)
    if not isinstance(v, list) or not v:
        fail('bad_message', 'message must be an array [type, ...]')
    t = _uint(v[0], 2 ** 32 - 1, 'type') if isinstance(v[0], int) else fail('bad_message', 'type')
    if t not in SERVER:
        fail('unknown_type', f'type {t}')
    name = SERVER[t]
    U = lambda x, w, m=2 ** 32 - 1: _uint(x, m, w)  # noqa: E731
    if name == 'welcome':
        _list(v, 13, name)
        watchers = _opt_uint(v[13] if len(v) > 13 else None, 2 ** 32 - 1, 'watchers')  # left out when 0
        return {'type': name, 'version': U(v[1], 'version'), 'client_id': U(v[2], 'client_id'), 'room': _str(v[3], 'room'),
                'kind': _str(v[4], 'kind'), 'scene': _str(v[5], 'scene'), 'server': _str(v[6], 'server'),
                'tick_rate': U(v[7], 'tick_rate'), 'snap_rate': U(v[8], 'snap_rate'),
                'peers': [{'id': U(p[0], 'peer.id'), 'name': _str(p[1], 'peer.name')} for p in _list(v[9], 0, 'peers')],
                'params': _params(v[10]), 'static': _static(v[11]), '_state': _snap(_list(v[12], 6, 'state'), True),
                'watchers': watchers or 0}
    if name == 'scene':
        _list(v, 6, name)
        return {'type': name, 'kind': _str(v[1], 'kind'), 'scene': _str(v[2], 'scene'), 'params': _params(v[3]),
                'static': _static(v[4]), '_state': _snap(_list(v[5], 6, 'state'), True)}
    if name in ('snap_key', 'snap_delta'):
        return _snap(v, name == 'snap_key')
    if name == 'contacts':
        _list(v, 3, name)
        pts = _bin(v[2], 'contacts.points')
        if len(pts) % 28 or len(pts) // 28 > 512:
            fail('bad_message', 'contacts.points: not whole records or too many')
        points = []
        for i in range(0, len(pts), 28):
            f = struct.unpack_from('<7f', pts, i)
            if not all(math.isfinite(x) for x in f):
                fail('bad_value', 'contacts: not finite')
            points.append({'point': list(f[0:3]), 'normal': list(f[3:6]), 'impulse': f[6]})
        return {'type': name, 'tick': U(v[1], 'tick'), 'points': points}
    if name == 'dice':
        _list(v, 4, name)
        faces = [U(x, 'face', 6) for x in _list(v[2], 0, 'faces')]
        if any(f < 1 for f in faces) or len(faces) > 8:
            fail('bad_value', 'dice: face outside 1..6')
        if U(v[3], 'sum') != sum(faces):
            fail('bad_value', 'dice: sum is not the sum of the faces')
        return {'type': name, 'tick': U(v[1], 'tick'), 'faces': faces, 'sum': v[3]}
    if name == 'param_changed':
        _list(v, 5, name)
        return {'type': name, 'name': _str(v[1], 'name'), 'value': _num(v[2], 1e9, 'value'), 'by': U(v[3], 'by'),
                'by_name': _str(v[4], 'by_name')}
    if name == 'peer_joined':
        _list(v, 3, name)
        return {'type': name, 'id': U(v[1], 'id'), 'name': _str(v[2], 'name')}
    if name == 'peer_left':
        _list(v, 2, name)
        return {'type': name, 'id': U(v[1], 'id')}
    if name == 'reset':
        _list(v, 4, name)
        return {'type': name, 'action': _str(v[1], 'action'), 'by': U(v[2], 'by'), 'by_name': _str(v[3], 'by_name')}
    if name == 'pong':
        _list(v, 3, name)
        return {'type': name, 'client_time': _num(v[1], 2 ** 53, 'client_time'), 'server_time': _num(v[2], 2 ** 53, 'server_time')}
    if name == 'error':
        _list(v, 4, name)  # seq: optional at the end
        return {'type': name, 'code': U(v[1], 'code'), 'name': _str(v[2], 'name'), 'message': _str(v[3], 'message', 200),
                'seq': _opt_uint(v[4] if len(v) > 4 else None, 2 ** 32 - 1, 'seq')}
    if name == 'lobby':
        _list(v, 2, name)
        return {'type': name, 'rooms': [{'id': r[0], 'kind': r[1], 'scene': r[2], 'clients': r[3], 'bodies': r[4], 'awake': r[5],
                                         'watchers': _opt_uint(r[6] if len(r) > 6 else None, 2 ** 32 - 1, 'watchers') or 0}
                                        for r in _list(v[1], 0, 'rooms')]}
    if name == 'watchers':
        _list(v, 2, name)
        return {'type': name, 'count': U(v[1], 'count')}
    raise AssertionError(name)


def _body(b):
    _list(b, 7, 'body')
    return {'id': _uint(b[0], 65535, 'body.id'), 'shape': _uint(b[1], 2, 'body.shape'),
            'size': [_num(x, 1e9, 'body.size') for x in b[2:5]], 'color': _uint(b[5], 0xffffff, 'body.color'),
            'material': _uint(b[6], 255, 'body.material')}


def _snap(v, key):
    U = lambda x, w: _uint(x, 2 ** 32 - 1, w)  # noqa: E731
    if key:
        _list(v, 6, 'snap_key')
        return {'type': 'snap_key', 'last_seq': U(v[1], 'last_seq'), 'tick': U(v[2], 'tick'), 'awake': U(v[3], 'awake'),
                '_bodies': [_body(b) for b in _list(v[4], 0, 'bodies')], '_bin': _bin(v[5], 'bin')}
    _list(v, 6, 'snap_delta')
    gap = U(v[3], 'tick_gap')
    if gap < 1:
        fail('bad_value', 'tick_gap below 1')
    return {'type': 'snap_delta', 'last_seq': U(v[1], 'last_seq'), 'tick': U(v[2], 'tick'), 'tick_gap': gap,
            'awake': U(v[4], 'awake'), '_bin': None if v[5] is None else _bin(v[5], 'bin'),
            '_spawns': [_body(b) for b in (v[6] if len(v) > 6 and v[6] is not None else [])],
            '_removes': [U(x, 'remove') for x in (v[7] if len(v) > 7 and v[7] is not None else [])]}


# ---- snapshots (§7)

class Bits:
    """§7.3: most significant bit first, zero padding to the byte, nothing after."""

    def __init__(self, data):
        self.data, self.pos = data, 0

    def u(self, n):
        v = 0
        for _ in range(n):
            byte = self.pos >> 3
            if byte >= len(self.data):
                fail('bad_snapshot', 'bin ends early')
            v = (v << 1) | ((self.data[byte] >> (7 - (self.pos & 7))) & 1)
            self.pos += 1
        return v

    def eg(self, k):
        zeros = 0
        while self.u(1) == 0:
            zeros += 1
            if zeros > 28:
                fail('bad_snapshot', 'exp-Golomb code too long')
        n = zeros + 1 + k
        if n > 28:
            fail('bad_snapshot', 'exp-Golomb code too long')
        m = (1 << (n - 1)) | self.u(n - 1)
        return m - (1 << k)

    def s(self, k):
        z = self.eg(k)
        return z >> 1 if z % 2 == 0 else -((z + 1) >> 1)

    def end(self):
        while self.pos & 7:
            if self.u(1):
                fail('bad_snapshot', 'padding bits not zero')
        if self.pos >> 3 != len(self.data):
            fail('bad_snapshot', 'bytes after the bit stream')


def _bits_of(gmax):
    return max(1, gmax.bit_length())


class SnapshotState:
    """The receiver's baseline (§7.1): quantized bodies and mesh vertices with velocities."""

    def __init__(self):
        self.static = None
        self.tick = None
        self.last_seq = 0
        self.awake = 0
        self.bodies = []  # dicts in ascending id
        self.meshes = []  # [{'q': [...], 'v': [...]}]

    def set_static(self, st):
        self.static = st
        lo, hi = st['bounds']['min'], st['bounds']['max']
        self.lo = lo
        self.pmax = [math.floor((hi[a] - lo[a]) * POS_SCALE) for a in range(3)]
        self.vmax = [math.floor((hi[a] - lo[a]) * VERT_SCALE) for a in range(3)]
        if not all(1 <= g <= 2 ** 24 - 1 for g in self.pmax):
            fail('bad_value', 'bounds invalid')
        self.pbits = [_bits_of(g) for g in self.pmax]
        self.vbits = [_bits_of(g) for g in self.vmax]
        self.verts = [m['verts'] for m in st['meshes']]

    def apply(self, msg):
        """welcome / scene / snap_key / snap_delta; a delta that does not fit raises bad_snapshot
        and leaves the state unchanged."""
        if msg['type'] in ('welcome', 'scene'):
            self.set_static(msg['static'])
            self.tick = None
            return self.apply(msg['_state'])
        if self.static is None:
            fail('bad_snapshot', 'no static description')
        if msg['type'] == 'snap_key':
            self._key(msg)
        else:
            self._delta(msg)

    def _abs(self, r, kp, kr, b):
        b['qp'] = [r.u(self.pbits[a]) for a in range(3)]
        b['ri'] = r.u(2)
        b['rc'] = [r.u(12) for _ in range(3)]
        b['vp'] = [r.s(kp) for _ in range(3)]
        b['vr'] = [r.s(kr) for _ in range(3)]
        self._check_body(b)

    def _check_body(self, b):
        if any(not 0 <= b['qp'][a] <= self.pmax[a] for a in range(3)) or any(not 0 <= c <= 4094 for c in b['rc']):
            fail('bad_snapshot', f"body {b['id']}: cell out of range")

    def _key(self, msg):
        r = Bits(msg['_bin'])
        r.u(1)
        kp, kr = r.u(4), r.u(4)
        kv = []
        for _ in self.verts:
            r.u(1)
            kv.append(r.u(4))
        ids = [b['id'] for b in msg['_bodies']]
        if any(ids[i] >= ids[i + 1] for i in range(len(ids) - 1)):
            fail('bad_snapshot', 'body ids not ascending')
        bodies = []
        for b in msg['_bodies']:
            nb = dict(b)
            self._abs(r, kp, kr, nb)
            bodies.append(nb)
        meshes = []
        for m, n in enumerate(self.verts):
            q = [r.u(self.vbits[i % 3]) for i in range(3 * n)]
            if any(q[i] > self.vmax[i % 3] for i in range(3 * n)):
                fail('bad_snapshot', 'vertex cell out of range')
            meshes.append({'q': q, 'v': [r.s(kv[m]) for _ in range(3 * n)]})
        r.end()
        self.bodies, self.meshes = bodies, meshes
        self.tick, self.last_seq, self.awake = msg['tick'], msg['last_seq'], msg['awake']

    def _delta(self, msg):
        if self.tick is None or msg['tick'] - msg['tick_gap'] != self.tick:
            fail('bad_snapshot', f"delta from tick {msg['tick'] - msg['tick_gap']}, baseline {self.tick}")
        have = {b['id']: b for b in self.bodies}
        removes = msg['_removes']
        if any(removes[i] >= removes[i + 1] for i in range(len(removes) - 1)) or any(i not in have for i in removes):
            fail('bad_snapshot', 'removes not ascending or unknown')
        gone = set(removes)
        kept = [dict(b, qp=list(b['qp']), rc=list(b['rc']), vp=[0, 0, 0], vr=[0, 0, 0])
                for b in self.bodies if b['id'] not in gone]
        kept_ids = {b['id'] for b in kept}
        spawns = [dict(b) for b in msg['_spawns']]
        sids = [b['id'] for b in spawns]
        if any(sids[i] >= sids[i + 1] for i in range(len(sids) - 1)) or any(i in kept_ids for i in sids):
            fail('bad_snapshot', 'spawns not ascending or already present')
        meshes = [{'q': list(m['q']), 'v': [0] * len(m['v'])} for m in self.meshes]
        if msg['_bin'] is not None:
            r = Bits(msg['_bin'])
            pred, kp, kr = r.u(1), r.u(4), r.u(4)
            mesh_hdr = [(r.u(1), r.u(4)) for _ in self.verts]
            for b in spawns:
                self._abs(r, kp, kr, b)
            old = {b['id']: b for b in self.bodies}
            n, idx = r.eg(0), -1
            if n > len(kept):
                fail('bad_snapshot', 'more changed bodies than kept')
            for _ in range(n):
                idx += 1 + r.eg(0)
                if idx >= len(kept):
                    fail('bad_snapshot', 'body index out of range')
                b, o = kept[idx], old[kept[idx]['id']]
                for a in range(3):
                    cell = o['qp'][a] + pred * o['vp'][a] + r.s(kp)
                    b['vp'][a] = cell - o['qp'][a]
                    b['qp'][a] = cell
                if r.u(1) == 0:
                    rc = [o['rc'][c] + pred * o['vr'][c] + r.s(kr) for c in range(3)]
                    b['vr'] = [rc[c] - o['rc'][c] for c in range(3)]
                    b['rc'] = rc
                else:
                    b['ri'] = r.u(2)
                    b['rc'] = [r.u(12) for _ in range(3)]
                    b['vr'] = [0, 0, 0]
                self._check_body(b)
            for m, nverts in enumerate(self.verts):
                mpred, kv = mesh_hdr[m]
                n, idx = r.eg(0), -1
                if n > nverts:
                    fail('bad_snapshot', 'more changed vertices than the mesh has')
                for _ in range(n):
                    idx += 1 + r.eg(0)
                    if idx >= nverts:
                        fail('bad_snapshot', 'vertex index out of range')
                    for a in range(3):
                        i = 3 * idx + a
                        oq, ov = self.meshes[m]['q'][i], self.meshes[m]['v'][i]
                        cell = oq + mpred * ov + r.s(kv)
                        if not 0 <= cell <= self.vmax[a]:
                            fail('bad_snapshot', 'vertex cell out of range')
                        meshes[m]['q'][i], meshes[m]['v'][i] = cell, cell - oq
            r.end()
        elif spawns:
            fail('bad_snapshot', 'spawns without a bin')
        self.bodies = sorted(kept + spawns, key=lambda b: b['id'])
        self.meshes = meshes
        self.tick, self.last_seq, self.awake = msg['tick'], msg['last_seq'], msg['awake']

    # ---- views

    def pose(self, b):
        """§7.2: dequantized position and unit quaternion (float64)."""
        pos = [self.lo[a] + b['qp'][a] / POS_SCALE for a in range(3)]
        vs = [(c - 2047) * (INV_SQRT2 / 2047) for c in b['rc']]
        largest = math.sqrt(max(0.0, 1 - sum(x * x for x in vs)))
        q = vs[:b['ri']] + [largest] + vs[b['ri']:]
        norm = math.sqrt(sum(x * x for x in q))
        return pos, [x / norm for x in q]

    def view(self):
        """The state in the vectors' JSON form (§11)."""
        bodies = []
        for b in self.bodies:
            pos, rot = self.pose(b)
            bodies.append({'id': b['id'], 'shape': b['shape'], 'size': b['size'], 'color': b['color'],
                           'material': b['material'], 'qp': b['qp'], 'ri': b['ri'], 'rc': b['rc'], 'vp': b['vp'],
                           'vr': b['vr'], 'pos': pos, 'rot': rot})
        return {'tick': self.tick, 'last_seq': self.last_seq, 'awake': self.awake, 'bodies': bodies,
                'meshes': [{'q': m['q'], 'v': m['v']} for m in self.meshes]}

    def cells(self):
        """What two receivers of the same tick must agree on exactly."""
        return ([(b['id'], tuple(b['qp']), b['ri'], tuple(b['rc'])) for b in self.bodies],
                [tuple(m['q']) for m in self.meshes])
