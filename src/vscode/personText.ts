/**
 * A model's sentence turned into the person's, for a command the person ran (Prepare, Rebuild):
 * the model's sentences say what happened, that "the program was not run", and then "Ask the user
 * to ..."; the person ran no program and is the user. Every model-facing sentence of the tool is
 * written in that one form (core/errors.ts), so the person's is had by turning its fixed phrases,
 * never by reading what the error was: the error's code decides what happens, not this text.
 */
export function forPerson(modelSentence: string): string {
  return (
    modelSentence
      // A command ran no program: the clause says nothing true to the person.
      .replace(/,? so the program was not run(?=[.;,])/g, '')
      .replace(/ so the program was not run\b/g, '')
      .replace(/\bAsk the user to check the "CodeAct Sandbox" output channel\./g, 'The details are in the CodeAct Sandbox output channel (Show Log).')
      // "Ask the user to start it" at a sentence's start: "Start it".
      .replace(/(^|[.;:]\s+)[Aa]sk the user to (\w)/g, (_m, lead: string, first: string) => `${lead}${first.toUpperCase()}`)
      .replace(/([,(]\s*)ask the user to /g, '$1')
      // "Ask the user to add X, or to point Y": "Add X, or point Y".
      .replace(/ or to (\w)/g, ' or $1')
      .replace(/\btheir account\b/g, 'your account')
      .replace(/\bthe user's\b/g, 'your')
      .replace(/\bthis user\b/g, 'your account')
      .replace(/\bthe user\b/g, 'you')
      .replace(/\s{2,}/g, ' ')
      .trim()
  );
}
