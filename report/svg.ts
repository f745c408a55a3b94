// The one place charts are drawn: an Apache ECharts option in, an SVG string out, rendered in Node with
// ECharts' server-side SVG renderer (no browser, no DOM, no script in the output). Every chart of the report
// and of the alert notices goes through renderSvg, so they share a look: fonts, colours, no animation.
import * as echarts from 'echarts';

/** Colours with a meaning, used alike by every chart and by the HTML tables. */
export const COLOURS = {
  ratio: '#1f4e79',
  projection: '#1f4e79',
  count: '#9ecae1',
  countProjected: '#c6dbef',
  minCount: '#6b6b6b',
  /** state colours: clear, watch (75-100 % of a threshold), level reached */
  clear: '#2e7d32',
  watch: '#e6a700',
  level: '#c62828',
  /** a row whose figures need a source not loaded (state unknown) */
  unknown: '#757575',
  /** threshold lines by rank, lowest level first */
  thresholds: ['#e6a700', '#ef6c00', '#c62828'],
  networks: ['#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#7f7f7f'],
  // Okabe-Ito hues: Won (blue) and Lost (vermilion) stay apart for red-green colour blindness, as green and red did not.
  statuses: { New: '#a6cee3', Pending: '#f0e442', Won: '#0072b2', Lost: '#d55e00', 'Did Not Fight': '#9e9e9e', Other: '#cc79a7' } as Record<string, string>,
} as const;

// Single quotes only: ECharts writes the family into a double-quoted style attribute unescaped (a double quote there
// ends the attribute: resvg refuses the SVG, a browser drops the rest of the list).
export const FONT = 'Helvetica, Arial, Liberation Sans, DejaVu Sans, sans-serif'; // unquoted: ECharts puts it in a style attribute as is

/** A chart's size in CSS pixels. */
export interface ChartSize {
  width: number;
  height: number;
}

/**
 * Renders an ECharts option to a standalone SVG document string (with xmlns, width, height and viewBox), so it
 * can be inlined in HTML or handed to an SVG-to-PNG converter as is. Animation is off; the text uses FONT.
 */
export function renderSvg(option: echarts.EChartsOption, size: ChartSize): string {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width: size.width, height: size.height });
  try {
    chart.setOption({
      animation: false,
      textStyle: { fontFamily: FONT, fontSize: 12, color: '#222' },
      backgroundColor: '#ffffff',
      ...option,
    });
    return chart.renderToSVGString();
  } finally {
    chart.dispose();
  }
}

/** Percent with up to `digits` decimals, unpadded (1.5 %, 0.25 %). */
export function pct(v: number, digits = 2): string {
  return `${Number(v.toFixed(digits))} %`;
}

/** A whole count with thousands separators. */
export function count(v: number): string {
  return Math.round(v).toLocaleString('en-US');
}

export type EChartsOption = echarts.EChartsOption;
