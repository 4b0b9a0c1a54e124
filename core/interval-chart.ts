import { escapeXml, formatTick, niceTicks } from "./line-chart.ts";

/**
 * Self-contained SVG interval chart: one row per item, its estimate as a dot and its
 * interval as a horizontal error bar, on a shared value axis (the campaign report's
 * "score per configuration with its 95% interval"). Rows keep the order given; labels sit
 * left of the plot so long configuration ids stay readable. Pure: rows in, SVG text out.
 *
 * Left out: what the interval means (the caller computes it and says so in the title or
 * caption), and sorting (the caller decides the order a reader should see).
 */
export interface IntervalRow {
  label: string;
  /** The estimate (a mean); a row without a finite value is drawn as "no value". */
  value: number | undefined;
  /** Interval bounds; both needed to draw a bar (a single seed has none). */
  low?: number | undefined;
  high?: number | undefined;
  /** Drawn in the accent colour (e.g. the answer). */
  highlight?: boolean;
  /** Short text right of the plot, e.g. "n=3". */
  note?: string;
}

export interface IntervalChartOptions {
  title: string;
  valueLabel: string;
  /** A vertical dashed line at a fixed level (chance, a published number). */
  reference?: { value: number; label: string };
  width?: number;
}

const rowHeight = 24;
const labelWidth = 170;
const noteWidth = 70;
const maxLabelCharacters = 26;

export function renderIntervalChart(rows: IntervalRow[], options: IntervalChartOptions): string {
  const width = options.width ?? 640;
  // Room above the rows for the title, and for the reference line's label under it.
  const margin = { top: options.reference ? 48 : 36, right: noteWidth, bottom: 48, left: labelWidth };
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = Math.max(1, rows.length) * rowHeight;
  const height = margin.top + plotHeight + margin.bottom;
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" class="interval-chart" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<title>${escapeXml(options.title)}</title>`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${escapeXml(options.title)}</text>`,
  ];
  const values = rows.flatMap((row) => [row.value, row.low, row.high]).filter((value): value is number => value !== undefined && Number.isFinite(value));
  if (values.length === 0) {
    parts.push(`<text x="${width / 2}" y="${margin.top + plotHeight / 2}" text-anchor="middle" fill="#666">no data yet</text>`, "</svg>");
    return parts.join("\n");
  }
  if (options.reference && Number.isFinite(options.reference.value)) values.push(options.reference.value);
  const ticks = niceTicks(Math.min(...values), Math.max(...values));
  const [low, high] = [ticks[0]!, ticks[ticks.length - 1]!];
  const scaleX = (value: number) => margin.left + ((value - low) / (high - low || 1)) * plotWidth;
  const rowY = (index: number) => margin.top + index * rowHeight + rowHeight / 2;
  const bottom = margin.top + plotHeight;

  parts.push(`<g class="grid" stroke="#e5e5e5">`);
  for (const tick of ticks) parts.push(`<line x1="${scaleX(tick).toFixed(1)}" x2="${scaleX(tick).toFixed(1)}" y1="${margin.top}" y2="${bottom}"/>`);
  parts.push("</g>", `<g class="axes" fill="#333">`);
  for (const tick of ticks) parts.push(`<text x="${scaleX(tick).toFixed(1)}" y="${bottom + 16}" text-anchor="middle">${formatTick(tick)}</text>`);
  parts.push(
    `<line x1="${margin.left}" x2="${margin.left + plotWidth}" y1="${bottom}" y2="${bottom}" stroke="#333"/>`,
    `<text x="${margin.left + plotWidth / 2}" y="${height - 10}" text-anchor="middle">${escapeXml(options.valueLabel)}</text>`,
    "</g>",
  );
  if (options.reference && Number.isFinite(options.reference.value)) {
    const x = scaleX(options.reference.value).toFixed(1);
    parts.push(
      `<line class="reference" x1="${x}" x2="${x}" y1="${margin.top - 4}" y2="${bottom}" stroke="#888" stroke-dasharray="4 3"/>`,
      `<text x="${x}" y="${margin.top - 6}" text-anchor="middle" fill="#666">${escapeXml(options.reference.label)}</text>`,
    );
  }
  rows.forEach((row, index) => {
    const y = rowY(index);
    const color = row.highlight ? "#d62728" : "#1f77b4";
    const label = row.label.length > maxLabelCharacters ? `${row.label.slice(0, maxLabelCharacters - 1)}…` : row.label;
    parts.push(
      `<text x="${margin.left - 8}" y="${(y + 4).toFixed(1)}" text-anchor="end"${row.highlight ? ' font-weight="bold"' : ""}>${escapeXml(label)}</text>`,
    );
    if (row.value === undefined || !Number.isFinite(row.value)) {
      parts.push(`<text x="${margin.left + 6}" y="${(y + 4).toFixed(1)}" fill="#888">no value</text>`);
    } else {
      if (row.low !== undefined && row.high !== undefined && Number.isFinite(row.low) && Number.isFinite(row.high)) {
        const [left, right] = [scaleX(row.low).toFixed(1), scaleX(row.high).toFixed(1)];
        parts.push(
          `<g class="interval" stroke="${color}" stroke-width="2" data-label="${escapeXml(row.label)}">`,
          `<line x1="${left}" x2="${right}" y1="${y.toFixed(1)}" y2="${y.toFixed(1)}"/>`,
          `<line x1="${left}" x2="${left}" y1="${(y - 5).toFixed(1)}" y2="${(y + 5).toFixed(1)}"/>`,
          `<line x1="${right}" x2="${right}" y1="${(y - 5).toFixed(1)}" y2="${(y + 5).toFixed(1)}"/>`,
          "</g>",
        );
      }
      parts.push(
        `<circle class="estimate" data-label="${escapeXml(row.label)}" cx="${scaleX(row.value).toFixed(1)}" cy="${y.toFixed(1)}" r="4" fill="${color}"/>`,
      );
    }
    if (row.note) parts.push(`<text x="${margin.left + plotWidth + 8}" y="${(y + 4).toFixed(1)}" fill="#555">${escapeXml(row.note)}</text>`);
  });
  parts.push("</svg>");
  return parts.join("\n");
}
