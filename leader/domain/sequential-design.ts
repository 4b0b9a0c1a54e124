import { alpha } from "./comparisons.ts";
import { normalCdf } from "./student-t.ts";

/**
 * The campaign as a group-sequential design: every stage's analysis is a look at the data,
 * and the planner may stop on a claim ("worse beyond seed noise", "the same within the
 * margin") at any look. Testing each look at 0.05 would let the chance of a false claim grow
 * with the number of looks; instead the error is spent over the campaign with a Pocock-type
 * spending function (Lan & DeMets 1983):
 *
 *   spent(t) = alpha x ln(1 + (e − 1) t),   t = experiments run / the experiment budget,
 *
 * so the whole campaign spends at most alpha = 0.05, front-loaded as Pocock's boundaries are
 * (a race that settles early can stop early). Look k's boundary c_k is the group-sequential
 * one: under no difference, the test statistic at the looks behaves as a standardized
 * Brownian motion at the information fractions t_1 < t_2 < ..., and c_k is set so that the
 * chance of crossing for the first time at look k is spent(t_k) − spent(t_{k−1}) (computed
 * by numerical integration over the region not yet crossed, Armitage, McPherson & Rowe
 * 1969). Because consecutive looks share most of their data, a look one seed later costs
 * little of the error, so racing one seed at a time is not penalized as a union bound would.
 * Look k's tests are held to the nominal two-sided level 2(1 − Φ(c_k)), with Holm's
 * correction within the look over the incumbent's comparisons.
 *
 * The stated error: the chance of any false "worse" claim over the whole campaign is at most
 * alpha = 0.05, and separately so for false "equivalent" claims (each TOST at the same
 * nominal level). It is approximate in three ways, said wherever it is stated: the looks'
 * information is taken proportional to the experiments run; the tests are Welch t-tests of a
 * few seeds, read at the normal boundary's nominal level; and a replication's seeds are
 * sized from the data seen so far. Pure and deterministic.
 */
export interface LookLevel {
  /** 1-based look (the stage whose analysis this is). */
  look: number;
  /** Information fraction at this look and at the one before (experiments run / the budget). */
  information: number;
  previousInformation: number;
  /** Error spent up to this look (the spending function at its information). */
  spent: number;
  /** The look's boundary on the standardized statistic, and the nominal level its tests are held to. */
  boundary: number;
  level: number;
}

/** Pocock-type error spending: what a campaign at information fraction t has spent of alpha. */
export function spentAlpha(information: number, total = alpha): number {
  const t = Math.min(1, Math.max(0, information));
  return total * Math.log(1 + (Math.E - 1) * t);
}

/** Points of the grid the density of the not-yet-crossed statistic is carried on. */
const gridPoints = 241;

interface Density {
  /** Information of the look the density is at, and its points (of the unstandardized sum S = Z·sqrt(t)). */
  information: number;
  points: number[];
  weights: number[];
}

/** Chance that S at `information` lies beyond ±bound, starting from the density at an earlier look. */
function crossing(density: Density, information: number, bound: number): number {
  const sd = Math.sqrt(information - density.information);
  let total = 0;
  density.points.forEach((point, index) => {
    total += density.weights[index]! * (normalCdf((-bound - point) / sd) + 1 - normalCdf((bound - point) / sd));
  });
  return total;
}

/** The density of S at `information` on (−bound, bound), for the paths that have not crossed. */
function carry(density: Density, information: number, bound: number): Density {
  const sd = Math.sqrt(information - density.information);
  const step = (2 * bound) / (gridPoints - 1);
  const points = Array.from({ length: gridPoints }, (_, index) => -bound + index * step);
  const weights = points.map((point, index) => {
    const trapezoid = index === 0 || index === gridPoints - 1 ? step / 2 : step;
    let value = 0;
    density.points.forEach((from, at) => {
      const z = (point - from) / sd;
      value += density.weights[at]! * (Math.exp(-0.5 * z * z) / (sd * Math.sqrt(2 * Math.PI)));
    });
    return value * trapezoid;
  });
  return { information, points, weights };
}

/**
 * The level of each look, given the experiments run up to each stage's end (cumulative) and
 * the experiment budget. A look that adds no information, or comes after the budget is
 * spent (a reopened campaign), gets level 0: the campaign's total stays at alpha.
 */
export function lookLevels(experimentsByLook: readonly number[], budget: number, total = alpha): LookLevel[] {
  // A campaign asks for the same schedule at every step after it: each is integrated once.
  const key = `${experimentsByLook.join(",")}/${budget}/${total}`;
  const known = computed.get(key);
  if (known) return known.map((look) => ({ ...look }));
  const looks = integrateLooks(experimentsByLook, budget, total);
  if (computed.size >= 1000) computed.clear();
  computed.set(key, looks);
  return looks.map((look) => ({ ...look }));
}

const computed = new Map<string, LookLevel[]>();

function integrateLooks(experimentsByLook: readonly number[], budget: number, total: number): LookLevel[] {
  let density: Density = { information: 0, points: [0], weights: [1] };
  const looks: LookLevel[] = [];
  for (const [index, experiments] of experimentsByLook.entries()) {
    const previous = density.information;
    const information = Math.min(1, experiments / Math.max(1, budget));
    const spend = spentAlpha(information, total) - spentAlpha(previous, total);
    const base = {
      look: index + 1,
      information: Math.max(information, previous),
      previousInformation: previous,
      spent: spentAlpha(Math.max(information, previous), total),
    };
    if (!(information > previous) || !(spend > 1e-12)) {
      looks.push({ ...base, boundary: Number.POSITIVE_INFINITY, level: 0 });
      continue;
    }
    // Bisection on the standardized boundary c: crossing falls as c grows.
    let low = 0;
    let high = 12;
    for (let round = 0; round < 60; round += 1) {
      const middle = (low + high) / 2;
      if (crossing(density, information, middle * Math.sqrt(information)) > spend) low = middle;
      else high = middle;
    }
    const boundary = high;
    looks.push({ ...base, boundary, level: 2 * (1 - normalCdf(boundary)) });
    density = carry(density, information, boundary * Math.sqrt(information));
  }
  return looks;
}

/** One sentence for plans, stops and the method line. */
export function designText(level: LookLevel | undefined, total = alpha): string {
  const spending = `group-sequential design: Pocock-type alpha spending of ${total} over the campaign's looks, so any false claim over the campaign has a chance of at most ${total} (approximately: normal boundaries read with t-tests); two configurations run at the same seeds are compared paired, on their seed-matched differences`;
  if (!level) return spending;
  return `${spending}; look ${level.look} at ${formatShare(level.information)} of the experiment budget tests at ${formatLevel(level.level)}`;
}

function formatShare(value: number): string {
  return `${Math.round(value * 100)}%`;
}

function formatLevel(value: number): string {
  return String(Number(value.toPrecision(3)));
}
