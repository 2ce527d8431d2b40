import { plural } from './state';

/**
 * What the model is told after its call's result when the storage budget, in the prune that
 * follows every call, took from the calling chat: its state (its kept runs, whole), or the files
 * this call saved. What other chats lost is none of its business; the log says it.
 */
export interface BudgetTook {
  /** The chat's runs deleted. */
  runs: number;
  /** Its state went with them: the next call starts from an empty state. */
  state: boolean;
  /** This call's own run was among them, with the files it saved. */
  thisRun: boolean;
  savedFiles: number;
}

export function budgetSentence(took: BudgetTook): string | undefined {
  if (took.state) {
    return (
      `State: deleted after this call, with ${plural(took.runs, 'stored run')} of this chat${took.thisRun ? ", this call's included," : ''} and their files, ` +
      'to keep the stored runs within the storage budget; the next call starts from an empty state.'
    );
  }
  if (took.thisRun && took.savedFiles > 0) {
    return `The ${took.savedFiles === 1 ? 'file this call saved was' : 'files this call saved were'} deleted right after it, to keep the stored runs within the storage budget.`;
  }
  return undefined;
}
