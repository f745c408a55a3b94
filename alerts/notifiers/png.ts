// A chart's SVG as a PNG for the alert notices (an e-mail client shows an inline PNG; few show SVG), through
// resvg (@resvg/resvg-js, prebuilt binaries). resvg draws text only with fonts it has loaded: the first of the
// usual system sans-serif fonts found (Debian's fonts-liberation, which CI installs) is loaded by file, which is
// much faster than scanning every system font; with none of them the system's fonts are scanned.
import fs from 'node:fs';
import { Resvg } from '@resvg/resvg-js';

/**
 * Sans-serif fonts by file, as Debian, Fedora, Alpine and macOS lay them out: family, regular and bold. Liberation
 * Sans first: it has Arial's metrics, which ECharts' server-side renderer assumes when it lays out labels (it
 * cannot measure text without a browser); DejaVu Sans is wider, and its labels run into each other.
 */
const FONT_FILES: ReadonlyArray<readonly [family: string, regular: string, bold: string]> = [
  ['Liberation Sans', '/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf', '/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf'],
  ['Liberation Sans', '/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf', '/usr/share/fonts/liberation-sans/LiberationSans-Bold.ttf'],
  ['DejaVu Sans', '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', '/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf'],
  ['DejaVu Sans', '/usr/share/fonts/dejavu/DejaVuSans.ttf', '/usr/share/fonts/dejavu/DejaVuSans-Bold.ttf'],
  ['DejaVu Sans', '/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf', '/usr/share/fonts/dejavu-sans-fonts/DejaVuSans-Bold.ttf'],
  ['DejaVu Sans', '/usr/share/fonts/TTF/DejaVuSans.ttf', '/usr/share/fonts/TTF/DejaVuSans-Bold.ttf'],
  ['Arial', '/System/Library/Fonts/Supplemental/Arial.ttf', '/System/Library/Fonts/Supplemental/Arial Bold.ttf'],
];

export interface ChartFont {
  family: string;
  /** the files loaded; empty when the system's fonts are scanned instead */
  files: string[];
}

let font: ChartFont | undefined;

/** The font the charts' text is drawn with (found once per process). */
export function chartFont(): ChartFont {
  if (font) return font;
  const hit = FONT_FILES.find(([, f]) => fs.existsSync(f));
  if (!hit) return (font = { family: '', files: [] });
  const [family, regular, bold] = hit;
  return (font = { family, files: [regular, ...(fs.existsSync(bold) ? [bold] : [])] });
}

export interface Png {
  png: Buffer;
  width: number;
  height: number;
}

/**
 * The SVG drawn as a PNG on a white background, `scale` times its own size (2: sharp on a high-density screen
 * at the SVG's size). Throws when the SVG cannot be read.
 */
export function svgToPng(svg: string, opts: { scale?: number } = {}): Png {
  const f = chartFont();
  const r = new Resvg(svg, {
    background: 'white',
    fitTo: { mode: 'zoom', value: opts.scale ?? 2 },
    font: f.files.length
      ? { loadSystemFonts: false, fontFiles: f.files, defaultFontFamily: f.family, sansSerifFamily: f.family }
      : { loadSystemFonts: true },
    logLevel: 'off',
  });
  const img = r.render();
  return { png: img.asPng(), width: img.width, height: img.height };
}

/** Width and height of a PNG from its header, or null when the bytes are not a PNG. */
export function pngSize(b: Buffer): { width: number; height: number } | null {
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (b.length < 24 || !b.subarray(0, 8).equals(sig) || b.toString('latin1', 12, 16) !== 'IHDR') return null;
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}
