/** Inline text of the report's answer: plain runs and strong runs (a configuration id, a yes or no). */
export type Inline = string | { strong: string };
export type Paragraph = Inline[];
