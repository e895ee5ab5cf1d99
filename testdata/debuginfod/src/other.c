/* other: a second program, so a test can serve the wrong file for a build
   ID and check the client refuses it. */
int counter;

int bump(int by)
{
	counter += by;
	return counter;
}

int main(void)
{
	return bump(2) == 2 ? 0 : 1;
}
