// Procedural textures drawn on canvases: every look in Tumble is made in code, so the
// client ships no image files. Each function returns a THREE.CanvasTexture in sRGB
// (colour maps) or linear (roughness/bump maps). A seeded random makes them repeatable.
import * as THREE from 'three';

export function rng(seed = 1) {
  let s = seed >>> 0 || 1;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 4294967296);
}

function canvas(w, h) {
  const c = document.createElement('canvas');
  c.width = w; c.height = h;
  return [c, c.getContext('2d')];
}

function tex(c, { srgb = true, repeat = null, aniso = 4 } = {}) {
  const t = new THREE.CanvasTexture(c);
  if (srgb) t.colorSpace = THREE.SRGBColorSpace;
  t.anisotropy = aniso;
  if (repeat) { t.wrapS = t.wrapT = THREE.RepeatWrapping; t.repeat.set(repeat[0], repeat[1]); }
  return t;
}

/** Vertical gradient for a scene background. */
export function skyTexture(top, bottom, stops = null) {
  const [c, g] = canvas(4, 256);
  const grad = g.createLinearGradient(0, 0, 0, 256);
  grad.addColorStop(0, top);
  if (stops) for (const [at, col] of stops) grad.addColorStop(at, col);
  grad.addColorStop(1, bottom);
  g.fillStyle = grad; g.fillRect(0, 0, 4, 256);
  return tex(c, { aniso: 1 });
}

/**
 * Wood grain along the texture's u axis: a base colour, long wavy growth lines of
 * varying darkness, fine pores, and an occasional knot the lines bend around.
 */
export function woodTexture(seed = 3, { base = '#c8965e', dark = 'rgba(90,50,20,', w = 1024, h = 256, knots = 2 } = {}) {
  const R = rng(seed);
  const [c, g] = canvas(w, h);
  g.fillStyle = base; g.fillRect(0, 0, w, h);
  // broad colour bands
  for (let i = 0; i < 6; i++) {
    g.fillStyle = `rgba(${R() < 0.5 ? '120,70,30' : '230,190,140'},${0.06 + R() * 0.08})`;
    g.fillRect(0, R() * h, w, 10 + R() * 40);
  }
  const K = Array.from({ length: knots }, () => ({ x: R() * w, y: R() * h, r: 6 + R() * 10 }));
  const lines = 70;
  for (let i = 0; i < lines; i++) {
    const y0 = (i / lines) * h + R() * 4;
    const amp = 1 + R() * 3, freq = 0.004 + R() * 0.006, ph = R() * 6.28;
    g.strokeStyle = `${dark}${0.08 + R() * 0.25})`;
    g.lineWidth = 0.6 + R() * 1.6;
    g.beginPath();
    for (let x = 0; x <= w; x += 6) {
      let y = y0 + Math.sin(x * freq + ph) * amp + Math.sin(x * freq * 3.1 + ph * 2) * amp * 0.3;
      for (const k of K) { // lines swell around knots
        const dx = x - k.x, dy = y - k.y, d2 = dx * dx + dy * dy, s = k.r * 3;
        if (d2 < s * s) y += (dy >= 0 ? 1 : -1) * (s - Math.sqrt(d2)) * 0.5;
      }
      x === 0 ? g.moveTo(x, y) : g.lineTo(x, y);
    }
    g.stroke();
  }
  for (const k of K) {
    const gr = g.createRadialGradient(k.x, k.y, 0, k.x, k.y, k.r);
    gr.addColorStop(0, 'rgba(70,35,12,0.85)'); gr.addColorStop(0.6, 'rgba(110,60,25,0.5)'); gr.addColorStop(1, 'rgba(110,60,25,0)');
    g.fillStyle = gr; g.beginPath(); g.ellipse(k.x, k.y, k.r * 1.6, k.r, 0, 0, 6.3); g.fill();
  }
  for (let i = 0; i < 2500; i++) { // pores
    g.fillStyle = `rgba(60,30,10,${R() * 0.18})`;
    g.fillRect(R() * w, R() * h, 2 + R() * 5, 0.8);
  }
  return tex(c, { repeat: [1, 1] });
}

/** Billiard-felt: a flat colour with fine fibres and a faint mottling. */
export function feltTexture(color = '#2e6a70', seed = 5) {
  const R = rng(seed);
  const [c, g] = canvas(512, 512);
  g.fillStyle = color; g.fillRect(0, 0, 512, 512);
  for (let i = 0; i < 60; i++) {
    const gr = g.createRadialGradient(R() * 512, R() * 512, 0, R() * 512, R() * 512, 40 + R() * 80);
    gr.addColorStop(0, `rgba(255,255,255,${R() * 0.035})`); gr.addColorStop(1, 'rgba(255,255,255,0)');
    g.fillStyle = gr; g.fillRect(0, 0, 512, 512);
  }
  for (let i = 0; i < 9000; i++) {
    const x = R() * 512, y = R() * 512, a = R() * 6.28, l = 1 + R() * 3;
    g.strokeStyle = R() < 0.5 ? `rgba(255,255,255,${R() * 0.09})` : `rgba(0,0,0,${R() * 0.12})`;
    g.lineWidth = 0.7;
    g.beginPath(); g.moveTo(x, y); g.lineTo(x + Math.cos(a) * l, y + Math.sin(a) * l); g.stroke();
  }
  return tex(c, { repeat: [3, 2] });
}

/** Standard die: opposite faces sum to 7. PIPS[n] are pip centres on a unit face. */
const PIPS = {
  1: [[0.5, 0.5]],
  2: [[0.27, 0.27], [0.73, 0.73]],
  3: [[0.26, 0.26], [0.5, 0.5], [0.74, 0.74]],
  4: [[0.28, 0.28], [0.72, 0.28], [0.28, 0.72], [0.72, 0.72]],
  5: [[0.26, 0.26], [0.74, 0.26], [0.5, 0.5], [0.26, 0.74], [0.74, 0.74]],
  6: [[0.28, 0.24], [0.72, 0.24], [0.28, 0.5], [0.72, 0.5], [0.28, 0.76], [0.72, 0.76]],
};

/** One die face: ivory with soft-edged, slightly sunken pips (the 1 is red). */
export function dieFaceTexture(n) {
  const S = 256;
  const [c, g] = canvas(S, S);
  const grad = g.createRadialGradient(S * 0.4, S * 0.35, S * 0.1, S / 2, S / 2, S * 0.75);
  grad.addColorStop(0, '#fffdf7'); grad.addColorStop(1, '#ece6d8');
  g.fillStyle = grad; g.fillRect(0, 0, S, S);
  const r = n === 1 ? S * 0.11 : S * 0.085;
  for (const [u, v] of PIPS[n]) {
    const x = u * S, y = v * S;
    g.fillStyle = 'rgba(255,255,255,0.9)';
    g.beginPath(); g.arc(x + 1.5, y + 2, r, 0, 6.3); g.fill();
    const pg = g.createRadialGradient(x - r * 0.3, y - r * 0.3, r * 0.1, x, y, r);
    if (n === 1) { pg.addColorStop(0, '#e0433a'); pg.addColorStop(1, '#8e1a14'); }
    else { pg.addColorStop(0, '#3b3f48'); pg.addColorStop(1, '#0d0f13'); }
    g.fillStyle = pg; g.beginPath(); g.arc(x, y, r, 0, 6.3); g.fill();
  }
  return tex(c);
}

/** A glossy ball: main colour with a white band, like a toy ball. */
export function ballTexture(main, band = '#ffffff') {
  const [c, g] = canvas(256, 128);
  g.fillStyle = main; g.fillRect(0, 0, 256, 128);
  g.fillStyle = band; g.fillRect(0, 54, 256, 20);
  g.fillStyle = 'rgba(0,0,0,0.12)'; g.fillRect(0, 52, 256, 2); g.fillRect(0, 74, 256, 2);
  return tex(c);
}

/** Rough stone blocks for the night wall. */
export function stoneTexture(seed = 9) {
  const R = rng(seed);
  const [c, g] = canvas(512, 512);
  g.fillStyle = '#3a3a40'; g.fillRect(0, 0, 512, 512);
  const rows = 8, bh = 512 / rows;
  for (let r = 0; r < rows; r++) {
    let x = -(r % 2) * 40;
    while (x < 512) {
      const bw = 70 + R() * 60;
      const l = 38 + R() * 22;
      g.fillStyle = `hsl(${220 + R() * 30},${6 + R() * 8}%,${l}%)`;
      g.fillRect(x + 2, r * bh + 2, bw - 4, bh - 4);
      for (let i = 0; i < 120; i++) {
        g.fillStyle = `rgba(${R() < 0.5 ? '0,0,0' : '255,255,255'},${R() * 0.08})`;
        g.fillRect(x + R() * bw, r * bh + R() * bh, 2 + R() * 6, 2 + R() * 4);
      }
      x += bw;
    }
  }
  return tex(c, { repeat: [4, 1] });
}

/** The Tumble flag: a deep blue field, a gold chevron and a white ring. */
export function flagTexture() {
  const [c, g] = canvas(512, 320);
  g.fillStyle = '#1d3f8f'; g.fillRect(0, 0, 512, 320);
  g.fillStyle = '#f2b632';
  g.beginPath(); g.moveTo(0, 0); g.lineTo(190, 160); g.lineTo(0, 320); g.closePath(); g.fill();
  g.fillStyle = '#c8281e';
  g.beginPath(); g.moveTo(0, 40); g.lineTo(140, 160); g.lineTo(0, 280); g.closePath(); g.fill();
  g.strokeStyle = '#ffffff'; g.lineWidth = 22;
  g.beginPath(); g.arc(330, 160, 78, 0, 6.3); g.stroke();
  g.fillStyle = '#ffffff'; g.beginPath(); g.arc(330, 160, 26, 0, 6.3); g.fill();
  // woven fabric
  for (let y = 0; y < 320; y += 3) { g.fillStyle = 'rgba(0,0,0,0.06)'; g.fillRect(0, y, 512, 1); }
  for (let x = 0; x < 512; x += 3) { g.fillStyle = 'rgba(255,255,255,0.04)'; g.fillRect(x, 0, 1, 320); }
  return tex(c);
}

/** Heavy wool for the cape: deep red with a twill weave and a gold hem. */
export function capeTexture() {
  const R = rng(21);
  const [c, g] = canvas(256, 256);
  g.fillStyle = '#8c1c22'; g.fillRect(0, 0, 256, 256);
  for (let i = 0; i < 256; i += 4) {
    g.strokeStyle = 'rgba(0,0,0,0.12)'; g.lineWidth = 1.5;
    g.beginPath(); g.moveTo(i, 0); g.lineTo(i + 256, 256); g.stroke();
    g.beginPath(); g.moveTo(i - 256, 0); g.lineTo(i, 256); g.stroke();
  }
  for (let i = 0; i < 3000; i++) { g.fillStyle = `rgba(255,200,200,${R() * 0.05})`; g.fillRect(R() * 256, R() * 256, 1, 1); }
  g.fillStyle = '#d9a53a'; g.fillRect(0, 242, 256, 10);
  g.fillStyle = '#f0c766'; g.fillRect(0, 244, 256, 2);
  return tex(c);
}

/** A soft radial glow for flames and light halos (use with additive blending). */
export function glowTexture(inner = 'rgba(255,220,150,1)', outer = 'rgba(255,120,20,0)') {
  const [c, g] = canvas(128, 128);
  const gr = g.createRadialGradient(64, 64, 0, 64, 64, 64);
  gr.addColorStop(0, inner); gr.addColorStop(0.25, inner.replace(/[\d.]+\)$/, '0.6)')); gr.addColorStop(1, outer);
  g.fillStyle = gr; g.fillRect(0, 0, 128, 128);
  return tex(c, { aniso: 1 });
}

/** Flour-dusted dough: cream with faint flour specks and tiny air bubbles. */
export function doughTexture() {
  const R = rng(33);
  const [c, g] = canvas(512, 512);
  g.fillStyle = '#f1dfbf'; g.fillRect(0, 0, 512, 512);
  for (let i = 0; i < 40; i++) {
    const x = R() * 512, y = R() * 512, gr = g.createRadialGradient(x, y, 0, x, y, 30 + R() * 60);
    gr.addColorStop(0, `rgba(255,250,240,${0.2 + R() * 0.2})`); gr.addColorStop(1, 'rgba(255,250,240,0)');
    g.fillStyle = gr; g.fillRect(0, 0, 512, 512);
  }
  for (let i = 0; i < 4000; i++) { g.fillStyle = `rgba(255,255,255,${R() * 0.5})`; g.fillRect(R() * 512, R() * 512, 1 + R() * 2, 1 + R() * 2); }
  for (let i = 0; i < 300; i++) { g.fillStyle = `rgba(170,130,80,${R() * 0.15})`; g.beginPath(); g.arc(R() * 512, R() * 512, 0.5 + R() * 1.5, 0, 6.3); g.fill(); }
  return tex(c);
}

/** Flour scattered on the board, drawn over wood as a transparent layer. */
export function flourTexture() {
  const R = rng(44);
  const [c, g] = canvas(512, 512);
  for (let i = 0; i < 30; i++) {
    const x = 128 + R() * 256, y = 128 + R() * 256, gr = g.createRadialGradient(x, y, 0, x, y, 40 + R() * 90);
    gr.addColorStop(0, `rgba(255,255,255,${0.25 + R() * 0.25})`); gr.addColorStop(1, 'rgba(255,255,255,0)');
    g.fillStyle = gr; g.fillRect(0, 0, 512, 512);
  }
  for (let i = 0; i < 5000; i++) {
    const a = R() * 6.28, d = Math.pow(R(), 0.7) * 230;
    g.fillStyle = `rgba(255,255,255,${R() * 0.6})`;
    g.fillRect(256 + Math.cos(a) * d, 256 + Math.sin(a) * d, 1 + R() * 1.5, 1 + R() * 1.5);
  }
  return tex(c);
}

/** Grass and earth for the night ground. */
export function groundTexture() {
  const R = rng(77);
  const [c, g] = canvas(512, 512);
  g.fillStyle = '#2b3423'; g.fillRect(0, 0, 512, 512);
  for (let i = 0; i < 14000; i++) {
    g.fillStyle = `hsla(${80 + R() * 40},${20 + R() * 30}%,${10 + R() * 25}%,${0.5})`;
    g.fillRect(R() * 512, R() * 512, 1, 2 + R() * 4);
  }
  return tex(c, { repeat: [8, 8] });
}
