// lobby.js (njs): GET /api/rooms on the router = the merged lobby.
//
// Each tumble-server lists only its own rooms. This asks every server for its
// /healthz (its instance name) and /api/rooms, and answers one JSON array in the
// same shape as a server's /api/rooms, each room with "server": the instance
// that holds it. A room id listed by several servers (the default rooms open on
// every server at start) is kept once: from the server the router would send
// that room's players to (asked through /_tumble/owner/<id>, which goes through
// the same consistent hash). A server that does not answer is left out, so the
// lobby keeps working while one is down.

function get(r, uri) {
    return r.subrequest(uri, { method: 'GET' }).then(
        (reply) => {
            if (reply.status !== 200) return null;
            try { return JSON.parse(reply.responseText); } catch (e) { return null; }
        },
        () => null);
}

function rooms(r) {
    const n = Number(r.variables.tumble_servers) || 0;
    const asks = [];
    for (let i = 0; i < n; i++) {
        asks.push(Promise.all([get(r, `/_tumble/${i}/healthz`), get(r, `/_tumble/${i}/api/rooms`)]));
    }
    Promise.all(asks).then((answers) => {
        const byId = {};
        const order = [];
        answers.forEach((pair) => {
            const health = pair[0];
            const list = pair[1];
            if (!health || !Array.isArray(list)) return;
            list.forEach((room) => {
                if (!room || typeof room.id !== 'string') return;
                // a fleet server (--redis) lists the fleet's rooms, each with its holder
                room.server = typeof room.instance === 'string' && room.instance ? room.instance : health.instance;
                if (!byId[room.id]) { byId[room.id] = []; order.push(room.id); }
                byId[room.id].push(room);
            });
        });
        const dups = order.filter((id) => byId[id].length > 1);
        return Promise.all(dups.map((id) => get(r, `/_tumble/owner/${id}`))).then((owners) => {
            const owner = {};
            dups.forEach((id, k) => { owner[id] = owners[k] && owners[k].instance; });
            const out = order.map((id) => {
                const held = byId[id];
                return held.find((room) => room.server === owner[id]) || held[0];
            });
            r.headersOut['Content-Type'] = 'application/json';
            r.headersOut['Cache-Control'] = 'no-store';
            r.return(200, JSON.stringify(out) + '\n');
        });
    }).catch((e) => {
        r.error(`lobby: ${e}`);
        r.return(502, '{"error":"lobby unavailable"}\n');
    });
}

export default { rooms };
