// The texts "Your model" starts from when a link names none.

/** A decoder or encoder's text: the second sentence stops where the model has to resolve "it". */
export const DEFAULT_TEXT = 'The animal didn’t cross the street because it was too tired. The animal didn’t cross the street because';
/** An encoder-decoder's source (its target is typed or generated). */
export const DEFAULT_SOURCE = 'The animal didn’t cross the street because it was too tired.';
