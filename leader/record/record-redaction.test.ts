import { SqliteSaver } from "@langchain/langgraph-checkpoint-sqlite";
import { describe, expect, it } from "vitest";
import { redactingSerializer, redactLeaderRecord } from "./record-redaction.ts";

const key = "sk-proj-Rk3Tz8Wq1Yx6Lm2Np9Vb4Hd7Jc5Fs0Ga";

describe("redactLeaderRecord", () => {
  it("redacts every string of the state but the text of a blueprint on its way to its file", () => {
    const blueprint = { blueprintId: "s1-a", text: `---\nid: s1-a\n---\n## Command\n\npython t.py data.prompt_key=prompt\n` };
    const state = { stop: { reason: "budget", explanation: `used ${key}` }, blueprintTexts: [blueprint], history: [{ rationale: "DB_PASS=Jm6Tq1Ew8Rz3" }] };
    expect(redactLeaderRecord(state, [])).toEqual({
      stop: { reason: "budget", explanation: "used [REDACTED]" },
      blueprintTexts: [blueprint],
      history: [{ rationale: "DB_PASS=[REDACTED]" }],
    });
  });
});

describe("redactingSerializer", () => {
  it("stores redacted JSON that LangGraph's own serializer reads back", async () => {
    const saver = SqliteSaver.fromConnString(":memory:");
    try {
      const serializer = redactingSerializer(saver.serde);
      const [type, bytes] = await serializer.dumpsTyped({ answer: `the key is ${key}`, list: [1, "two", null] });
      expect(type).toBe("json");
      expect(new TextDecoder().decode(bytes)).not.toContain("Rk3Tz8Wq");
      expect(await serializer.loadsTyped(type, bytes)).toEqual({ answer: "the key is [REDACTED]", list: [1, "two", null] });
      const raw = new Uint8Array([1, 2, 3]);
      expect(await serializer.dumpsTyped(raw)).toEqual(["bytes", raw]);
    } finally {
      saver.db.close();
    }
  });
});
